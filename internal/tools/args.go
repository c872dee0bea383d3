package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/loopdev/loop/internal/jsonenc"
)

// field describes one argument; a tool's fields are both its JSON Schema and
// the rules its arguments are validated against, so the two cannot drift.
type field struct {
	name     string
	typ      string // "string", "integer", "number", "boolean" or "array" (of objects)
	desc     string
	required bool
	items    []field // the object fields of an array's elements
}

// schemaOf renders fields as a JSON Schema object.
func schemaOf(fields []field) json.RawMessage {
	b, err := jsonenc.Marshal(objectSchema(fields))
	if err != nil {
		panic(fmt.Sprintf("tools: schema does not marshal: %v", err)) // static data; a test covers every tool
	}
	return b
}

func objectSchema(fields []field) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range fields {
		p := map[string]any{"type": f.typ, "description": f.desc}
		if f.typ == "array" {
			p["items"] = objectSchema(f.items)
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// args holds validated argument values: string, int, float64, bool, or
// []args for arrays of objects. Absent and null fields are missing.
type args map[string]any

func (a args) str(name string) (string, bool) {
	v, ok := a[name].(string)
	return v, ok
}

func (a args) integer(name string) (int, bool) {
	v, ok := a[name].(int)
	return v, ok
}

func (a args) number(name string) (float64, bool) {
	v, ok := a[name].(float64)
	return v, ok
}

func (a args) boolean(name string) bool {
	v, _ := a[name].(bool)
	return v
}

func (a args) list(name string) ([]args, bool) {
	v, ok := a[name].([]args)
	return v, ok
}

// parseArgs checks raw against fields: it must be a JSON object (empty or
// null counts as {}), with no unknown fields, every required field present,
// and each value of its declared type. The error says what is wrong in words
// the model can fix its call with.
func parseArgs(tool string, fields []field, raw json.RawMessage) (args, error) {
	a, err := parseObject(fields, raw, "")
	if err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %w", tool, err)
	}
	return a, nil
}

func parseObject(fields []field, raw json.RawMessage, where string) (args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%sarguments must be a JSON object, got %s", where, describe(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%sarguments are not valid JSON: %v", where, err)
	}
	known := map[string]field{}
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		known[f.name] = f
		names = append(names, f.name)
	}
	var unknown []string
	for k := range m {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%sunknown field %s (allowed: %s)", where, quoteAll(unknown), strings.Join(names, ", "))
	}
	out := args{}
	for _, f := range fields {
		v, ok := m[f.name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if f.required {
				return nil, fmt.Errorf("%smissing required field %q (%s)", where, f.name, f.typ)
			}
			continue
		}
		val, err := parseValue(f, bytes.TrimSpace(v), where)
		if err != nil {
			return nil, err
		}
		out[f.name] = val
	}
	return out, nil
}

func parseValue(f field, v json.RawMessage, where string) (any, error) {
	wrong := func() error {
		return fmt.Errorf("%sfield %q must be %s, got %s", where, f.name, article(f.typ), describe(v))
	}
	switch f.typ {
	case "string":
		var s string
		if v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, wrong()
		}
		return s, nil
	case "boolean":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return nil, wrong()
		}
		return b, nil
	case "number", "integer":
		var n float64
		if v[0] == '"' || json.Unmarshal(v, &n) != nil {
			return nil, wrong()
		}
		if f.typ == "number" {
			return n, nil
		}
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return nil, wrong()
		}
		return int(n), nil
	case "array":
		var elems []json.RawMessage
		if v[0] != '[' || json.Unmarshal(v, &elems) != nil {
			return nil, wrong()
		}
		out := make([]args, 0, len(elems))
		for i, e := range elems {
			a, err := parseObject(f.items, e, fmt.Sprintf("%s%s[%d]: ", where, f.name, i))
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%sfield %q has unsupported type %q", where, f.name, f.typ)
}

func article(typ string) string {
	switch typ {
	case "integer":
		return "an integer"
	case "array":
		return "an array of objects"
	}
	return "a " + typ
}

// describe names a JSON value's kind and shows a short prefix of it.
func describe(v json.RawMessage) string {
	kind := "a number"
	switch v[0] {
	case '"':
		kind = "a string"
	case '{':
		kind = "an object"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	case 'n':
		kind = "null"
	}
	s := string(v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return kind + " " + s
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
