package schema

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode"
)

// model is a Spec read into Types: the named definitions, in the order
// they were first met, and every method's and notification's params and
// result by the name of its definition.
type model struct {
	spec   Spec
	defs   []*def
	byName map[string]*def
	byType map[reflect.Type]*def

	typeOverrides  map[reflect.Type]Override
	fieldOverrides map[fieldKey]Override
	open           map[reflect.Type]bool

	methods             []call
	serverRequests      []call
	notifications       []call
	clientNotifications []call

	errs []error
}

// def is one named definition.
type def struct {
	name  string
	typ   *Type
	alias string // for a method's params or result: what it is of ("params of session/get")
}

// call is one method or notification: the definitions of its params and
// result (no result for a notification), and whether params may be left
// out (none of their members is required).
type call struct {
	name           string
	params, result string
	paramsOptional bool
}

type fieldKey struct {
	t    reflect.Type
	name string
}

// read builds the model of spec; every problem (a type reflection cannot
// describe, two definitions of one name) is in the error.
func read(spec Spec) (*model, error) {
	m := &model{
		spec:           spec,
		byName:         map[string]*def{},
		byType:         map[reflect.Type]*def{},
		typeOverrides:  map[reflect.Type]Override{},
		fieldOverrides: map[fieldKey]Override{},
		open:           map[reflect.Type]bool{},
	}
	for _, o := range spec.Overrides {
		if o.Open && o.Schema == nil && o.Field == "" && o.Type != nil && o.Type.Kind() == reflect.Struct {
			m.open[o.Type] = true
			continue
		}
		if o.Type == nil || (o.Schema == nil) == (o.As == nil) {
			m.errorf("an override needs a type and either a schema or a Go type to read (%v)", o.Type)
			continue
		}
		if o.Field == "" {
			m.typeOverrides[o.Type] = o
		} else {
			m.fieldOverrides[fieldKey{o.Type, o.Field}] = o
		}
	}
	if len(spec.Errors) > 0 {
		codes := make([]string, len(spec.Errors))
		for i, e := range spec.Errors {
			codes[i] = e.Code
		}
		m.define(ErrorCodeDef, Enum(codes...), "")
	}
	for _, x := range spec.Methods {
		m.methods = append(m.methods, m.call(x.Name, x.Params, x.Result, x.OrResults))
	}
	for _, x := range spec.ServerRequests {
		m.serverRequests = append(m.serverRequests, m.call(x.Name, x.Params, x.Result, x.OrResults))
	}
	for _, x := range spec.Notifications {
		m.notifications = append(m.notifications, m.call(x.Name, x.Params, nil, nil))
	}
	for _, x := range spec.ClientNotifications {
		m.clientNotifications = append(m.clientNotifications, m.call(x.Name, x.Params, nil, nil))
	}
	for _, d := range m.defs {
		m.checkRefs(d.name, d.typ)
	}
	return m, errors.Join(m.errs...)
}

func (m *model) errorf(format string, args ...any) {
	m.errs = append(m.errs, fmt.Errorf(format, args...))
}

// define adds a named definition; a second one of the same name is an
// error unless it is the same.
func (m *model) define(name string, t *Type, alias string) *def {
	if d, ok := m.byName[name]; ok {
		if !reflect.DeepEqual(d.typ, t) {
			m.errorf("two definitions are named %s", name)
		}
		return d
	}
	d := &def{name: name, typ: t, alias: alias}
	m.byName[name] = d
	m.defs = append(m.defs, d)
	return d
}

// call describes one method's or notification's params and result as
// definitions named after it (session/set_model: SessionSetModelParams,
// SessionSetModelResult), which refer to the Go types' own.
func (m *model) call(name string, params, result reflect.Type, orResults []reflect.Type) call {
	c := call{name: name}
	base := pascal(name)
	if params == nil {
		params = reflect.TypeFor[struct{}]()
	}
	// A handler's *P and *R are never null on the wire.
	for params.Kind() == reflect.Pointer {
		params = params.Elem()
	}
	for result != nil && result.Kind() == reflect.Pointer {
		result = result.Elem()
	}
	pt := m.typeOf(params)
	c.params = m.named(base+"Params", pt, "params of "+name)
	c.paramsOptional = !m.hasRequired(pt)
	if result != nil {
		rt := m.typeOf(result)
		if len(orResults) > 0 {
			u := &Type{Kind: KindUnion, Of: []*Type{rt}}
			for _, o := range orResults {
				for o.Kind() == reflect.Pointer {
					o = o.Elem()
				}
				u.Of = append(u.Of, m.typeOf(o))
			}
			rt = u
		}
		c.result = m.named(base+"Result", rt, "result of "+name)
	}
	return c
}

// named returns the definition called name for t: t's own when t already
// refers to a definition of that name, else a new one.
func (m *model) named(name string, t *Type, alias string) string {
	if t.Kind == KindRef && t.Ref == name && !t.Nullable {
		return name
	}
	m.define(name, t, alias)
	return name
}

// hasRequired says whether t is an object with a required member.
func (m *model) hasRequired(t *Type) bool {
	for t.Kind == KindRef {
		d, ok := m.byName[t.Ref]
		if !ok {
			return false
		}
		t = d.typ
	}
	for _, f := range t.Fields {
		if !f.Optional {
			return true
		}
	}
	return false
}

// typeOf describes what encoding/json reads and writes for a value of t.
func (m *model) typeOf(t reflect.Type) *Type {
	if o, ok := m.typeOverrides[t]; ok {
		return m.use(o)
	}
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return Any()
	case reflect.TypeFor[time.Time]():
		return &Type{Kind: KindString, Format: "date-time"}
	}
	if t.Kind() == reflect.Pointer {
		return Nullable(m.typeOf(t.Elem()))
	}
	if custom(t) {
		m.errorf("%v has its own JSON encoding: say what it is with an Override", t)
		return Any()
	}
	switch t.Kind() {
	case reflect.Bool:
		return Boolean()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Integer()
	case reflect.Float32, reflect.Float64:
		return Number()
	case reflect.String:
		return String()
	case reflect.Interface:
		return Any()
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !custom(t.Elem()) {
			return Nullable(String()) // base64
		}
		return &Type{Kind: KindArray, Elem: m.typeOf(t.Elem()), Nullable: true}
	case reflect.Array:
		return &Type{Kind: KindArray, Elem: m.typeOf(t.Elem())}
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if !t.Key().Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
				m.errorf("%v: a map key JSON cannot write", t)
			}
		}
		return &Type{Kind: KindMap, Elem: m.typeOf(t.Elem()), Nullable: true}
	case reflect.Struct:
		if t.Name() == "" {
			return m.object(t)
		}
		if d, ok := m.byType[t]; ok {
			return Ref(d.name)
		}
		name := defName(t)
		if _, taken := m.byName[name]; taken {
			m.errorf("%v: another definition is already named %s", t, name)
		}
		// Registered before its members, so a type that contains itself
		// (UsageTotals' title) refers to its own definition.
		d := m.define(name, &Type{Kind: KindObject}, "")
		m.byType[t] = d
		d.typ = m.object(t)
		return Ref(name)
	}
	m.errorf("%v: JSON cannot hold a %v", t, t.Kind())
	return Any()
}

// custom says whether t's JSON is its own (it or its pointer implements a
// marshaler or an unmarshaler), so its Go shape says nothing.
func custom(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(reflect.TypeFor[json.Marshaler]()) || x.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
			x.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// use applies an override: a definition of its own when it is named.
func (m *model) use(o Override) *Type {
	if o.As != nil {
		return m.typeOf(o.As)
	}
	if o.Name == "" {
		c := *o.Schema
		return &c
	}
	m.define(o.Name, o.Schema, "")
	return Ref(o.Name)
}

// object describes a struct's members as encoding/json finds them.
func (m *model) object(t reflect.Type) *Type {
	out := &Type{Kind: KindObject, Open: m.open[t]}
	for _, f := range jsonFields(t) {
		var ft *Type
		o, overridden := m.fieldOverrides[fieldKey{t, f.name}]
		if !overridden {
			o, overridden = m.fieldOverrides[fieldKey{f.owner, f.name}]
		}
		// A type that says its own shape says its own null too (a
		// workspace id kept raw is a []byte, yet null is one of its values).
		_, typeOverridden := m.typeOverrides[f.typ]
		switch {
		case overridden:
			// As the override says, null included.
			ft = m.use(o)
		case f.asString && scalar(f.typ):
			ft = String()
			if f.typ.Kind() == reflect.Pointer {
				ft.Nullable = true
			}
		default:
			ft = m.typeOf(f.typ)
		}
		if f.omit && !overridden && !typeOverridden {
			// A nil pointer, slice, map or interface is left out, never
			// written as null.
			switch f.typ.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				c := *ft
				c.Nullable = false
				ft = &c
			}
		}
		out.Fields = append(out.Fields, Field{Name: f.name, Type: ft, Optional: f.omit})
	}
	return out
}

// scalar says whether the json ",string" option applies to t.
func scalar(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// checkRefs reports a reference to a definition nobody made.
func (m *model) checkRefs(where string, t *Type) {
	if t == nil {
		return
	}
	if t.Kind == KindRef {
		if _, ok := m.byName[t.Ref]; !ok {
			m.errorf("%s refers to %s, which is not defined", where, t.Ref)
		}
	}
	m.checkRefs(where, t.Elem)
	for _, f := range t.Fields {
		m.checkRefs(where, f.Type)
	}
	for _, o := range t.Of {
		m.checkRefs(where, o)
	}
}

// jsonField is one member encoding/json reads and writes.
type jsonField struct {
	name     string
	index    []int
	typ      reflect.Type
	owner    reflect.Type // the struct that declares it
	tagged   bool
	omit     bool // omitempty or omitzero: it may be absent
	asString bool // the ",string" option
}

// jsonFields lists t's members by encoding/json's rules: exported fields,
// renamed or dropped by their json tag, the fields of untagged embedded
// structs promoted, and of two at the same depth the tagged one kept (or
// neither), in the order of their declaration.
func jsonFields(t reflect.Type) []jsonField {
	type level struct {
		t     reflect.Type
		index []int
	}
	var fields []jsonField
	current, next := []level{}, []level{{t: t}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, nil
		for _, l := range current {
			if visited[l.t] {
				continue
			}
			visited[l.t] = true
			for i := 0; i < l.t.NumField(); i++ {
				sf := l.t.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(append([]int(nil), l.index...), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{t: ft, index: index})
					continue
				}
				f := jsonField{name: name, index: index, typ: sf.Type, owner: l.t, tagged: name != ""}
				if f.name == "" {
					f.name = sf.Name
				}
				for _, o := range strings.Split(opts, ",") {
					switch o {
					case "omitempty", "omitzero":
						f.omit = true
					case "string":
						f.asString = true
					}
				}
				fields = append(fields, f)
			}
		}
	}
	// The dominant field of each name: the shallowest, and of several at
	// that depth the one tagged; otherwise none.
	sort.SliceStable(fields, func(i, j int) bool {
		if fields[i].name != fields[j].name {
			return fields[i].name < fields[j].name
		}
		if len(fields[i].index) != len(fields[j].index) {
			return len(fields[i].index) < len(fields[j].index)
		}
		return fields[i].tagged && !fields[j].tagged
	})
	var out []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) < len(group[1].index) ||
			group[0].tagged && !(group[1].tagged && len(group[1].index) == len(group[0].index)) {
			out = append(out, group[0])
		}
		i = j
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].index, out[j].index
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
	return out
}

// defName is the definition name of a named Go type: its name with a
// capital first letter, type arguments folded in (limit[int]: LimitInt).
func defName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		args := name[i+1:]
		name = name[:i]
		for _, a := range strings.FieldsFunc(args, func(r rune) bool { return r == ',' || r == ']' || r == ' ' }) {
			if j := strings.LastIndexByte(a, '.'); j >= 0 {
				a = a[j+1:]
			}
			name += a
		}
	}
	return pascal(name)
}

// pascal turns a method name or a Go name into a definition name:
// session/set_model is SessionSetModel, $/cancelRequest CancelRequest.
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
