package schema

// Doc is a Spec read into its definitions, for checks that hold the
// protocol's prose (docs/protocol.md) to the same types the schema
// describes.
type Doc struct{ m *model }

// Read reads spec as JSONSchema and TypeScript do.
func Read(spec Spec) (*Doc, error) {
	m, err := read(spec)
	if err != nil {
		return nil, err
	}
	return &Doc{m: m}, nil
}

// Names lists the definitions in the order they were first met.
func (d *Doc) Names() []string {
	out := make([]string, len(d.m.defs))
	for i, def := range d.m.defs {
		out[i] = def.name
	}
	return out
}

// Fields are the members of the definition name, following references
// (SessionGetResult to Snapshot); nil when it is not an object.
func (d *Doc) Fields(name string) []Field {
	def, ok := d.m.byName[name]
	if !ok {
		return nil
	}
	t := def.typ
	for seen := 0; t.Kind == KindRef && seen < len(d.m.defs); seen++ {
		next, ok := d.m.byName[t.Ref]
		if !ok {
			return nil
		}
		t = next.typ
	}
	if t.Kind != KindObject {
		return nil
	}
	return t.Fields
}

// ParamsDef and ResultDef name the definitions of a method's (or a
// notification's) params and result: session/set_model has
// SessionSetModelParams and SessionSetModelResult.
func ParamsDef(method string) string { return pascal(method) + "Params" }

// ResultDef: see ParamsDef.
func ResultDef(method string) string { return pascal(method) + "Result" }
