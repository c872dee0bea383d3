package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Shared string `json:"shared"`
	Deep   int    `json:"deep"`
}

type outer struct {
	inner
	Name     string            `json:"name"`
	Note     string            `json:"note,omitempty"`
	Skipped  string            `json:"-"`
	Dash     string            `json:"-,"`
	Count    int64             `json:"count,string"`
	Ptr      *int              `json:"ptr"`
	PtrOmit  *int              `json:"ptrOmit,omitempty"`
	List     []string          `json:"list"`
	Bytes    []byte            `json:"bytes,omitempty"`
	Labels   map[string]int    `json:"labels"`
	Raw      json.RawMessage   `json:"raw"`
	At       time.Time         `json:"at"`
	Any      any               `json:"any,omitempty"`
	Self     *outer            `json:"self,omitempty"`
	Untagged bool              // no tag: the Go name is the member
	hidden   string            // unexported: never a member
	Mode     string            `json:"mode"`
	Nested   struct{ X int }   `json:"nested"`
	Fixed    [2]float64        `json:"fixed"`
	Custom   custom2           `json:"custom"`
	ByName   map[string]*inner `json:"byName,omitempty"`
}

// custom2 decodes itself: only an Override says what it is.
type custom2 struct{ v string }

func (c *custom2) UnmarshalJSON(b []byte) error { c.v = string(b); return nil }

func specOf(params any, overrides ...Override) Spec {
	return Spec{
		Methods:   []Method{{Name: "x/do_it", Params: reflect.TypeOf(params), Result: reflect.TypeFor[*inner]()}},
		Errors:    []ErrorCode{{Code: "busy", Integer: -32001}, {Code: "invalid_params", Integer: -32602}},
		Overrides: overrides,
	}
}

func field(t *testing.T, fields []Field, name string) Field {
	t.Helper()
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no member %q in %v", name, fields)
	return Field{}
}

// TestGoTypesReadAsEncodingJSONWritesThem: members, optional and nullable
// members follow encoding/json: tags rename and drop, omitempty makes a
// member optional and never null, a nil pointer, slice or map without it
// is written as null, embedded structs are promoted, ",string" quotes a
// number, json.RawMessage and interfaces are any value, time.Time a
// date-time string, a type that refers to itself a definition of its own.
func TestGoTypesReadAsEncodingJSONWritesThem(t *testing.T) {
	spec := specOf(outer{},
		Override{Type: reflect.TypeFor[custom2](), Schema: Nullable(String())},
		Override{Type: reflect.TypeFor[outer](), Field: "mode", Name: "Mode", Schema: Enum("a", "b")})
	d, err := Read(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Names(); !reflect.DeepEqual(got, []string{"ErrorCode", "Outer", "Mode", "Inner", "XDoItParams", "XDoItResult"}) {
		t.Errorf("definitions %v", got)
	}
	fields := d.Fields("XDoItParams")
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	want := []string{"shared", "deep", "name", "note", "-", "count", "ptr", "ptrOmit", "list", "bytes", "labels", "raw", "at", "any", "self", "Untagged", "mode", "nested", "fixed", "custom", "byName"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("members\n got %v\nwant %v", names, want)
	}
	for _, c := range []struct {
		name     string
		kind     Kind
		nullable bool
		optional bool
	}{
		{"shared", KindString, false, false},
		{"note", KindString, false, true},
		{"count", KindString, false, false},
		{"ptr", KindInteger, true, false},
		{"ptrOmit", KindInteger, false, true},
		{"list", KindArray, true, false},
		{"bytes", KindString, false, true},
		{"labels", KindMap, true, false},
		{"raw", KindAny, false, false},
		{"any", KindAny, false, true},
		{"self", KindRef, false, true},
		{"Untagged", KindBoolean, false, false},
		{"mode", KindRef, false, false},
		{"nested", KindObject, false, false},
		{"fixed", KindArray, false, false},
		{"custom", KindString, true, false},
		{"byName", KindMap, false, true},
	} {
		f := field(t, fields, c.name)
		if f.Type.Kind != c.kind || f.Type.Nullable != c.nullable || f.Optional != c.optional {
			t.Errorf("%s: kind %v nullable %v optional %v, want %v %v %v", c.name, f.Type.Kind, f.Type.Nullable, f.Optional, c.kind, c.nullable, c.optional)
		}
	}
	if f := field(t, fields, "at"); f.Type.Format != "date-time" {
		t.Errorf("time.Time: format %q", f.Type.Format)
	}
	if f := field(t, fields, "byName"); f.Type.Elem.Kind != KindRef || !f.Type.Elem.Nullable {
		t.Errorf("map of pointers: values %+v, want a nullable reference", f.Type.Elem)
	}
}

// TestEmbeddedFieldsFollowEncodingJSON: of two members of one name the
// shallower wins, and of two at one depth the tagged one (or neither).
func TestEmbeddedFieldsFollowEncodingJSON(t *testing.T) {
	type a struct {
		X int `json:"x"`
		Y int
		Z int
	}
	type b struct {
		X int
		Y int
		Z int `json:"Z"`
	}
	type top struct {
		a
		b
		X string `json:"x"`
	}
	var got []string
	for _, f := range jsonFields(reflect.TypeFor[top]()) {
		got = append(got, f.name+":"+f.typ.Kind().String())
	}
	// x: top's own, shallower than a's; X: b's alone ("X" is not "x");
	// Y: two untagged at one depth, dropped; Z: b's is tagged. In the
	// order of their fields' indexes, as encoding/json writes them.
	want := []string{"X:int", "Z:int", "x:string"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
	b2, _ := json.Marshal(top{a: a{X: 1, Y: 2, Z: 3}, b: b{X: 4, Y: 5, Z: 6}, X: "s"})
	if string(b2) != `{"X":4,"Z":6,"x":"s"}` {
		t.Errorf("encoding/json writes %s: the rules above are not its rules", b2)
	}
}

// TestTypesWithoutAShapeAreRefused: a type that decodes itself needs an
// Override, and two Go types may not share a definition name; a
// reference to a definition nobody made is refused too.
func TestTypesWithoutAShapeAreRefused(t *testing.T) {
	type withCustom struct {
		C custom2 `json:"c"`
	}
	if _, err := JSONSchema(specOf(withCustom{})); err == nil || !strings.Contains(err.Error(), "Override") {
		t.Errorf("a type with its own decoding: err %v", err)
	}
	type inner2 = struct {
		I inner `json:"i"`
	}
	type Inner struct{ Other int }
	type clash struct {
		A inner `json:"a"`
		B Inner `json:"b"`
	}
	if _, err := JSONSchema(specOf(clash{})); err == nil || !strings.Contains(err.Error(), "Inner") {
		t.Errorf("two types named Inner: err %v", err)
	}
	if _, err := JSONSchema(specOf(inner2{}, Override{Type: reflect.TypeFor[inner](), Field: "deep", Schema: Ref("Nowhere")})); err == nil {
		t.Error("a reference to no definition was accepted")
	}
}

// TestJSONSchemaAndTypeScriptShapes pins how the two outputs spell the
// model: the 2020-12 dialect, closed objects, required members, nullable
// types, references, the error object tying data.code to its integer;
// and TypeScript's optional members, unions with null, the method map
// and the error code union.
func TestJSONSchemaAndTypeScriptShapes(t *testing.T) {
	type caps struct {
		Known bool `json:"known,omitempty"`
	}
	type params struct {
		Name  string   `json:"name"`
		Note  string   `json:"note,omitempty"`
		Ptr   *inner   `json:"ptr"`
		Modes []string `json:"modes"`
		Caps  *caps    `json:"caps,omitempty"`
		Null  *string  `json:"null,omitempty"`
	}
	spec := specOf(params{},
		Override{Type: reflect.TypeFor[params](), Field: "modes", Schema: ArrayOf(Enum("a", "b"))},
		Override{Type: reflect.TypeFor[params](), Field: "null", Schema: Nullable(String())},
		Override{Type: reflect.TypeFor[caps](), Open: true})
	spec.Notifications = []Notification{{Name: "x/happened", Params: reflect.TypeFor[inner]()}}
	b, err := JSONSchema(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$schema"] != Draft {
		t.Errorf("$schema %v", doc["$schema"])
	}
	defs := doc["$defs"].(map[string]any)
	p := defs["Params"].(map[string]any)
	if p["additionalProperties"] != false || !reflect.DeepEqual(p["required"], []any{"name", "ptr", "modes"}) {
		t.Errorf("params: %v", p)
	}
	ptr := p["properties"].(map[string]any)["ptr"]
	if want := map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/Inner"}, map[string]any{"type": "null"}}}; !reflect.DeepEqual(ptr, want) {
		t.Errorf("a nullable reference: %v", ptr)
	}
	if c := defs["Caps"].(map[string]any); c["additionalProperties"] != nil {
		t.Errorf("an open object is closed: %v", c)
	}
	if defs["XDoItParams"].(map[string]any)["$ref"] != "#/$defs/Params" {
		t.Errorf("XDoItParams: %v", defs["XDoItParams"])
	}
	if _, ok := defs["XHappenedParams"]; !ok {
		t.Error("no XHappenedParams")
	}
	pairs := defs["Error"].(map[string]any)["oneOf"].([]any)
	if len(pairs) != 2 {
		t.Errorf("error pairs: %v", pairs)
	}

	ts, err := TypeScript(spec, "header")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// header\n",
		"export interface Params {\n  name: string;\n  note?: string;\n  ptr: Inner | null;\n  modes: (\"a\" | \"b\")[];\n  caps?: Caps;\n  null?: string | null;\n}\n",
		"export interface Caps {\n  known?: boolean;\n  [member: string]: unknown;\n}\n",
		"export type XDoItParams = Params;\n",
		"  \"x/do_it\": { params: XDoItParams; result: XDoItResult };\n",
		"  \"x/happened\": XHappenedParams;\n",
		"export type ErrorCode = \"busy\" | \"invalid_params\";\n",
		"  \"busy\": -32001;\n",
	} {
		if !strings.Contains(string(ts), want) {
			t.Errorf("TypeScript lacks %q:\n%s", want, ts)
		}
	}
}

// rawScope keeps its member as sent, as native.Scope does: a []byte whose
// JSON shape only an Override says.
type rawScope json.RawMessage

func (s *rawScope) UnmarshalJSON(b []byte) error { *s = append((*s)[:0:0], b...); return nil }

// TestATypesOwnShapeKeepsItsNullWhenOptional: a member of a type whose
// shape an Override says (here a string or null kept raw, which is a
// []byte in Go) is optional when tagged omitempty, and may still be null:
// omitempty says the member may be absent, not that the override's null
// is never sent (session/list's workspaceId: absent is every scope, null
// the independent chats).
func TestATypesOwnShapeKeepsItsNullWhenOptional(t *testing.T) {
	type params struct {
		Scope rawScope `json:"scope,omitempty"`
		Must  rawScope `json:"must"`
	}
	d, err := Read(specOf(params{}, Override{Type: reflect.TypeFor[rawScope](), Schema: Nullable(String())}))
	if err != nil {
		t.Fatal(err)
	}
	fields := d.Fields("XDoItParams")
	for _, c := range []struct {
		name     string
		optional bool
	}{{"scope", true}, {"must", false}} {
		f := field(t, fields, c.name)
		if f.Type.Kind != KindString || !f.Type.Nullable || f.Optional != c.optional {
			t.Errorf("%s: kind %v nullable %v optional %v, want a nullable string, optional %v", c.name, f.Type.Kind, f.Type.Nullable, f.Optional, c.optional)
		}
	}
}

// TestAMemberKeptRawIsReadAsTheTypeItDecodesInto: an Override with As
// describes a json.RawMessage member as the Go type the server decodes it
// into later (initialize's capabilities), with that type's own overrides;
// an override with both a Schema and As, or neither, is refused.
func TestAMemberKeptRawIsReadAsTheTypeItDecodesInto(t *testing.T) {
	type caps struct {
		Known json.RawMessage `json:"known,omitempty"`
	}
	type params struct {
		Caps json.RawMessage `json:"caps,omitempty"`
	}
	ptype, ctype := reflect.TypeFor[params](), reflect.TypeFor[caps]()
	d, err := Read(specOf(params{},
		Override{Type: ptype, Field: "caps", As: ctype},
		Override{Type: ctype, Open: true},
		Override{Type: ctype, Field: "known", Schema: Boolean()}))
	if err != nil {
		t.Fatal(err)
	}
	f := field(t, d.Fields("XDoItParams"), "caps")
	if f.Type.Kind != KindRef || f.Type.Ref != "Caps" || f.Type.Nullable || !f.Optional {
		t.Errorf("caps: %+v optional %v, want an optional reference to Caps", f.Type, f.Optional)
	}
	if k := field(t, d.Fields("Caps"), "known"); k.Type.Kind != KindBoolean {
		t.Errorf("Caps.known: %+v, want its override's boolean", k.Type)
	}
	for _, o := range []Override{
		{Type: ptype, Field: "caps", As: ctype, Schema: String()},
		{Type: ptype, Field: "caps"},
	} {
		if _, err := Read(specOf(params{}, o)); err == nil {
			t.Errorf("%+v was accepted", o)
		}
	}
}
