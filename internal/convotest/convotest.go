// Package convotest makes convo values for the tests of the packages that
// keep, send or trace them: the store's disk records (docs/storage.md),
// the native dialect's wire types (docs/protocol.md), the trace's blocks
// (docs/traces.md) and the scripted model's request log. Every field is
// set, each to a value of its own, by reflection, so that a field added
// to convo.Message, convo.Block or convo.Usage and forgotten by one of
// those contracts fails that contract's test instead of being dropped
// silently.
package convotest

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/loopdev/loop/convo"
)

// Message returns a message with every field set, its usage with every
// field set, and one content block with every field set. No two fields
// hold the same value.
func Message() convo.Message {
	var m convo.Message
	var f filler
	f.fill(reflect.ValueOf(&m).Elem(), "Message")
	return m
}

// Block returns a content block with every field set, no two to the same
// value.
func Block() convo.Block {
	var b convo.Block
	var f filler
	f.fill(reflect.ValueOf(&b).Elem(), "Block")
	return b
}

var rawType = reflect.TypeFor[json.RawMessage]()

// filler numbers the values it makes, so that a conversion that swaps two
// fields of the same type fails too.
type filler struct{ n int }

func (f *filler) fill(v reflect.Value, path string) {
	f.n++
	switch {
	case v.Type() == rawType:
		v.SetBytes(fmt.Appendf(nil, `{"n":%d}`, f.n))
	case v.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, f.n))
	case v.CanInt():
		v.SetInt(int64(f.n))
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), path)
		v.Set(p)
	case v.Kind() == reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0), path+"[]")
		v.Set(s)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			f.fill(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		// A new kind of field: teach fill, and the contracts' tests
		// will then say which of them do not carry it.
		panic(fmt.Sprintf("convotest: %s is a %s: teach fill", path, v.Kind()))
	}
}

// Missing lists the fields of want, a convo value, that got, one
// contract's form of it, does not hold with the same value. Fields are
// matched by their Go name, through pointers, structs and slices; a
// field's path is its name below want ("Content[].Arguments"), and the
// paths in notCarried are the fields the contract leaves out on purpose.
func Missing(want, got any, notCarried ...string) []string {
	skip := make(map[string]bool, len(notCarried))
	for _, p := range notCarried {
		skip[p] = true
	}
	var out []string
	missing(reflect.ValueOf(want), reflect.ValueOf(got), "", skip, &out)
	return out
}

func missing(w, g reflect.Value, path string, skip map[string]bool, out *[]string) {
	if skip[path] {
		return
	}
	where := path
	if where == "" {
		where = "the value"
	}
	switch {
	case w.Kind() == reflect.Pointer && g.Kind() == reflect.Pointer:
		if w.IsNil() || g.IsNil() {
			if w.IsNil() != g.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: nil is %v, want %v", where, g.IsNil(), w.IsNil()))
			}
			return
		}
		missing(w.Elem(), g.Elem(), path, skip, out)
	case w.Kind() == reflect.Struct && g.Kind() == reflect.Struct:
		for i := range w.NumField() {
			name := w.Type().Field(i).Name
			p := name
			if path != "" {
				p = path + "." + name
			}
			if skip[p] {
				continue
			}
			gf := g.FieldByName(name)
			if !gf.IsValid() {
				*out = append(*out, p+": not carried")
				continue
			}
			missing(w.Field(i), gf, p, skip, out)
		}
	case w.Kind() == reflect.Slice && g.Kind() == reflect.Slice && w.Type().Elem().Kind() == reflect.Struct:
		if w.Len() != g.Len() || w.IsNil() != g.IsNil() {
			*out = append(*out, fmt.Sprintf("%s: %d elements (nil %v), want %d (nil %v)", where, g.Len(), g.IsNil(), w.Len(), w.IsNil()))
			return
		}
		for i := range w.Len() {
			missing(w.Index(i), g.Index(i), path+"[]", skip, out)
		}
	case g.Type().ConvertibleTo(w.Type()):
		if !reflect.DeepEqual(w.Interface(), g.Convert(w.Type()).Interface()) {
			*out = append(*out, fmt.Sprintf("%s: %s, want %s", where, show(g), show(w)))
		}
	default:
		*out = append(*out, fmt.Sprintf("%s: a %s, want a %s", where, g.Type(), w.Type()))
	}
}

// show prints raw JSON as text rather than as numbers.
func show(v reflect.Value) string {
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
		return fmt.Sprintf("%q", v.Bytes())
	}
	return fmt.Sprintf("%v", v.Interface())
}
