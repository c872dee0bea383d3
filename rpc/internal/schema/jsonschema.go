package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
)

// Draft is the JSON Schema dialect JSONSchema writes.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// The definitions JSONSchema adds beside the types: the frames of each
// direction, the error object and a response.
const (
	ClientRequestDef      = "ClientRequest"
	ClientNotificationDef = "ClientNotification"
	ServerRequestDef      = "ServerRequest"
	ServerNotificationDef = "ServerNotification"
	ResponseDef           = "Response"
	ErrorDef              = "Error"
)

// JSONSchema describes spec as one JSON Schema document: every type under
// $defs; each method's params and result as <Method>Params and
// <Method>Result (session/get: SessionGetParams, SessionGetResult), each
// notification's params as <Notification>Params; the frames a client and
// the server send as ClientRequest, ClientNotification, ServerRequest and
// ServerNotification (one branch per method); the error object as Error,
// with each data.code tied to its JSON-RPC integer. The root accepts any
// frame of the protocol. Objects are closed (additionalProperties false),
// unless an Override opens one: a member the Go types do not declare is
// one the server never writes.
func JSONSchema(spec Spec) ([]byte, error) {
	m, err := read(spec)
	if err != nil {
		return nil, err
	}
	defs := &ordered{}
	for _, d := range m.defs {
		s := m.jsonType(d.typ)
		if d.alias != "" {
			s.set("description", d.alias)
		}
		defs.set(d.name, s)
	}
	defs.set(ClientRequestDef, m.frames(m.methods, true, "A request a client sends."))
	defs.set(ClientNotificationDef, m.frames(m.clientNotifications, false, "A notification a client sends."))
	defs.set(ServerRequestDef, m.frames(m.serverRequests, true, "A request the server sends; the client answers it with a Response."))
	defs.set(ServerNotificationDef, m.frames(m.notifications, false, "A notification the server sends."))
	defs.set(ResponseDef, m.response())
	defs.set(ErrorDef, m.errorObject())

	root := &ordered{}
	root.set("$schema", Draft)
	if spec.Title != "" {
		root.set("title", spec.Title)
	}
	var frames []any
	for _, name := range []string{ClientRequestDef, ClientNotificationDef, ServerRequestDef, ServerNotificationDef, ResponseDef} {
		frames = append(frames, ref(name))
	}
	root.set("anyOf", frames)
	root.set("$defs", defs)
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ordered is a JSON object that keeps its members in the order they were
// set, so the document reads as the types are declared.
type ordered struct {
	keys []string
	vals []any
}

func (o *ordered) set(k string, v any) {
	if i := slices.Index(o.keys, k); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

func (o *ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func ref(name string) *ordered {
	o := &ordered{}
	o.set("$ref", "#/$defs/"+name)
	return o
}

// jsonType is one Type as a schema.
func (m *model) jsonType(t *Type) *ordered {
	o := &ordered{}
	typ := func(name string) {
		if t.Nullable {
			o.set("type", []string{name, "null"})
		} else {
			o.set("type", name)
		}
	}
	switch t.Kind {
	case KindAny:
	case KindBoolean:
		typ("boolean")
	case KindInteger:
		typ("integer")
	case KindNumber:
		typ("number")
	case KindString:
		typ("string")
		if t.Format != "" {
			o.set("format", t.Format)
		}
		if len(t.Enum) > 0 {
			var vals []any
			for _, v := range t.Enum {
				vals = append(vals, v)
			}
			if t.Nullable {
				vals = append(vals, nil)
			}
			o.set("enum", vals)
		}
	case KindArray:
		typ("array")
		o.set("items", m.jsonType(t.Elem))
	case KindMap:
		typ("object")
		o.set("additionalProperties", m.jsonType(t.Elem))
	case KindObject:
		typ("object")
		props := &ordered{}
		required := []string{}
		for _, f := range t.Fields {
			props.set(f.Name, m.jsonType(f.Type))
			if !f.Optional {
				required = append(required, f.Name)
			}
		}
		o.set("properties", props)
		if len(required) > 0 {
			o.set("required", required)
		}
		if !t.Open {
			o.set("additionalProperties", false)
		}
	case KindRef:
		if !t.Nullable {
			return ref(t.Ref)
		}
		o.set("anyOf", []any{ref(t.Ref), map[string]string{"type": "null"}})
	case KindUnion:
		var of []any
		for _, x := range t.Of {
			of = append(of, m.jsonType(x))
		}
		if t.Nullable {
			of = append(of, map[string]string{"type": "null"})
		}
		o.set("anyOf", of)
	}
	return o
}

// frames is one branch per method or notification of a direction: the
// method's name as a constant and its params.
func (m *model) frames(calls []call, withID bool, desc string) *ordered {
	var branches []any
	for _, c := range calls {
		props := &ordered{}
		props.set("jsonrpc", map[string]string{"const": "2.0"})
		required := []string{"jsonrpc"}
		if withID {
			props.set("id", map[string]any{"type": []string{"string", "integer"}})
			required = append(required, "id")
		}
		props.set("method", map[string]string{"const": c.name})
		props.set("params", ref(c.params))
		required = append(required, "method")
		if !c.paramsOptional {
			required = append(required, "params")
		}
		b := &ordered{}
		b.set("title", c.name)
		b.set("type", "object")
		b.set("properties", props)
		b.set("required", required)
		branches = append(branches, b)
	}
	o := &ordered{}
	o.set("description", desc)
	if len(branches) == 0 {
		o.set("not", map[string]any{})
		return o
	}
	o.set("oneOf", branches)
	return o
}

// response is a reply to either side's request: a result (of the
// request's method, <Method>Result) or an error.
func (m *model) response() *ordered {
	id := map[string]any{"type": []string{"string", "integer", "null"}}
	result := &ordered{}
	result.set("type", "object")
	rp := &ordered{}
	rp.set("jsonrpc", map[string]string{"const": "2.0"})
	rp.set("id", id)
	rp.set("result", map[string]any{})
	result.set("properties", rp)
	result.set("required", []string{"jsonrpc", "id", "result"})
	failed := &ordered{}
	failed.set("type", "object")
	fp := &ordered{}
	fp.set("jsonrpc", map[string]string{"const": "2.0"})
	fp.set("id", id)
	fp.set("error", ref(ErrorDef))
	failed.set("properties", fp)
	failed.set("required", []string{"jsonrpc", "id", "error"})
	o := &ordered{}
	o.set("description", "A reply to a request; its result is the <Method>Result of the request's method.")
	o.set("oneOf", []any{result, failed})
	return o
}

// errorObject is JSON-RPC's error object with Loop's data.code, each code
// tied to its integer.
func (m *model) errorObject() *ordered {
	byInt := map[int64][]string{}
	var ints []int64
	for _, e := range m.spec.Errors {
		if _, ok := byInt[e.Integer]; !ok {
			ints = append(ints, e.Integer)
		}
		byInt[e.Integer] = append(byInt[e.Integer], e.Code)
	}
	sort.Slice(ints, func(i, j int) bool { return ints[i] > ints[j] })

	cause := &ordered{}
	cause.set("type", "object")
	cp := &ordered{}
	cp.set("code", ref(ErrorCodeDef))
	cp.set("message", map[string]string{"type": "string"})
	cause.set("properties", cp)
	cause.set("required", []string{"code", "message"})
	cause.set("additionalProperties", false)

	data := &ordered{}
	data.set("type", "object")
	dp := &ordered{}
	dp.set("code", ref(ErrorCodeDef))
	dp.set("errors", map[string]any{"type": "array", "items": cause})
	data.set("properties", dp)
	data.set("required", []string{"code"})
	data.set("additionalProperties", false)

	props := &ordered{}
	props.set("code", map[string]any{"type": "integer", "enum": ints})
	props.set("message", map[string]string{"type": "string"})
	props.set("data", data)

	var pairs []any
	for _, n := range ints {
		p := &ordered{}
		pp := &ordered{}
		pp.set("code", map[string]any{"const": n})
		pp.set("data", map[string]any{"properties": map[string]any{"code": map[string]any{"enum": byInt[n]}}})
		p.set("properties", pp)
		pairs = append(pairs, p)
	}
	o := &ordered{}
	o.set("description", "A failed request: data.code names the failure ("+ErrorCodeDef+"), code is its JSON-RPC integer.")
	o.set("type", "object")
	o.set("properties", props)
	o.set("required", []string{"code", "message", "data"})
	o.set("additionalProperties", false)
	if len(pairs) > 0 {
		o.set("oneOf", pairs)
	}
	return o
}
