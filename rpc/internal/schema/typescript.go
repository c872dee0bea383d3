package schema

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// TypeScript declares spec's types in TypeScript: an interface or type
// per definition (the same names as JSONSchema's), ClientMethods and
// ServerRequests mapping each method to {params, result},
// ServerNotifications and ClientNotifications mapping each notification
// to its params, ErrorCode (the union of every data.code), ErrorCodes
// (each data.code to its JSON-RPC integer) and RpcError. header is written
// first, as a comment.
func TypeScript(spec Spec, header string) ([]byte, error) {
	m, err := read(spec)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
	}
	for _, d := range m.defs {
		b.WriteString("\n")
		if d.alias != "" {
			fmt.Fprintf(&b, "/** The %s. */\n", d.alias)
		}
		if d.typ.Kind == KindObject && len(d.typ.Fields) > 0 {
			fmt.Fprintf(&b, "export interface %s ", d.name)
			m.tsObject(&b, d.typ, "")
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "export type %s = %s;\n", d.name, m.tsType(d.typ, ""))
	}

	table := func(name, doc string, calls []call, withResult bool) {
		fmt.Fprintf(&b, "\n/** %s */\nexport interface %s {\n", doc, name)
		for _, c := range calls {
			if withResult {
				fmt.Fprintf(&b, "  %s: { params: %s; result: %s };\n", strconv.Quote(c.name), c.params, c.result)
			} else {
				fmt.Fprintf(&b, "  %s: %s;\n", strconv.Quote(c.name), c.params)
			}
		}
		b.WriteString("}\n")
	}
	table("ClientMethods", "The methods a client calls, each with its params and its result.", m.methods, true)
	b.WriteString("\nexport type ClientMethod = keyof ClientMethods;\n")
	table("ServerRequests", "The requests the server sends, each with its params and the result the client answers.", m.serverRequests, true)
	table("ServerNotifications", "The notifications the server sends, each with its params.", m.notifications, false)
	b.WriteString("\nexport type ServerNotification = {\n  [M in keyof ServerNotifications]: { jsonrpc: \"2.0\"; method: M; params: ServerNotifications[M] };\n}[keyof ServerNotifications];\n")
	table("ClientNotifications", "The notifications a client may send, each with its params.", m.clientNotifications, false)

	b.WriteString("\n/** Every error's data.code and its JSON-RPC integer code. */\nexport interface ErrorCodes {\n")
	for _, e := range spec.Errors {
		fmt.Fprintf(&b, "  %s: %d;\n", strconv.Quote(e.Code), e.Integer)
	}
	b.WriteString("}\n")
	if len(spec.Errors) > 0 {
		fmt.Fprintf(&b, "\n/** A failed request's error object: clients branch on data.code. */\nexport interface RpcError {\n  code: ErrorCodes[%s];\n  message: string;\n  data: { code: %s; errors?: { code: %s; message: string }[] };\n}\n", ErrorCodeDef, ErrorCodeDef, ErrorCodeDef)
	}
	return b.Bytes(), nil
}

// identifier says whether a member name needs no quotes.
func identifier(s string) bool {
	for i, r := range s {
		letter := r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// tsType is t as a TypeScript type; indent is the current line's.
func (m *model) tsType(t *Type, indent string) string {
	s := m.tsBare(t, indent)
	if t.Nullable && t.Kind != KindAny {
		s += " | null"
	}
	return s
}

func (m *model) tsBare(t *Type, indent string) string {
	switch t.Kind {
	case KindAny:
		return "unknown"
	case KindBoolean:
		return "boolean"
	case KindInteger, KindNumber:
		return "number"
	case KindString:
		if len(t.Enum) == 0 {
			return "string"
		}
		quoted := make([]string, len(t.Enum))
		for i, v := range t.Enum {
			quoted[i] = strconv.Quote(v)
		}
		return strings.Join(quoted, " | ")
	case KindArray:
		elem := m.tsType(t.Elem, indent)
		if strings.Contains(elem, " | ") || strings.HasPrefix(elem, "{") && strings.Contains(elem, "\n") {
			return "(" + elem + ")[]"
		}
		return elem + "[]"
	case KindMap:
		return "{ [key: string]: " + m.tsType(t.Elem, indent) + " }"
	case KindObject:
		if len(t.Fields) == 0 {
			return "Record<string, never>"
		}
		var b bytes.Buffer
		m.tsObject(&b, t, indent)
		return b.String()
	case KindRef:
		return t.Ref
	case KindUnion:
		parts := make([]string, len(t.Of))
		for i, x := range t.Of {
			parts[i] = m.tsType(x, indent)
		}
		return strings.Join(parts, " | ")
	}
	return "unknown"
}

// tsObject writes an object's members, one a line.
func (m *model) tsObject(b *bytes.Buffer, t *Type, indent string) {
	b.WriteString("{\n")
	inner := indent + "  "
	for _, f := range t.Fields {
		name := f.Name
		if !identifier(name) {
			name = strconv.Quote(name)
		}
		opt := ""
		if f.Optional {
			opt = "?"
		}
		fmt.Fprintf(b, "%s%s%s: %s;\n", inner, name, opt, m.tsType(f.Type, inner))
	}
	if t.Open {
		fmt.Fprintf(b, "%s[member: string]: unknown;\n", inner)
	}
	b.WriteString(indent + "}")
}
