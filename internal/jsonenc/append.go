package jsonenc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// encoding/json builds every value whole in a pooled buffer that grows by
// a quarter at a time, then copies it out: one long string (a 50 MB
// prompt in a notification, a commit, a request body) costs some seven
// times its size in buffers, and the pool keeps the largest until two
// collections have passed. Append, Size and Write encode the same bytes
// as Marshal without that: a long string is escaped into room made for
// it once (Append), only counted (Size), or escaped a piece at a time
// into the writer (Write). Structs, slices, maps with string keys,
// pointers, interfaces, strings, booleans and integers are encoded here;
// anything else (floats, byte slices, json.Marshaler and
// encoding.TextMarshaler values, embedded structs, tags this file does not
// read) goes through Marshal, whose output it is by definition.

// Append appends v's encoding to dst: byte for byte what Marshal returns,
// but that <, > and & are themselves also where a json.RawMessage or a
// MarshalJSON spelled them as escapes (UnescapeHTML).
func Append(dst []byte, v any) ([]byte, error) {
	e := encoder{buf: dst}
	e.value(reflect.ValueOf(v), 0)
	return e.buf, e.err
}

// Size is len(Marshal(v)), counted without building the encoding.
func Size(v any) (int, error) {
	e := encoder{count: true}
	e.value(reflect.ValueOf(v), 0)
	return e.n, e.err
}

// Write writes v's encoding to w as it is made, in pieces of some 32
// KiB; it returns the bytes written. When v cannot be encoded (a NaN, a
// failing MarshalJSON) part of it may have been written: check it with
// Size first where a partial write would matter.
func Write(w io.Writer, v any) (int, error) {
	e := encoder{w: w, buf: make([]byte, 0, writeChunk+writeChunk/8)}
	e.value(reflect.ValueOf(v), 0)
	e.flush()
	return e.n, e.err
}

// writeChunk is the size of Write's pieces.
const writeChunk = 32 << 10

// maxDepth bounds nesting (a cycle through pointers); encoding/json
// reports the cycle, so Marshal does the reporting.
const maxDepth = 1000

type encoder struct {
	buf   []byte
	w     io.Writer // Write: buf goes to w as it fills
	count bool      // Size: only n counts
	n     int       // bytes counted, or written to w
	err   error
	// fields caches each struct type's fields for this call.
	fields map[reflect.Type][]field
}

type field struct {
	index     int
	name      []byte // `"name":`
	omitEmpty bool
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// raw appends bytes of the encoding.
func (e *encoder) raw(b ...byte) {
	if e.err != nil {
		return
	}
	if e.count {
		e.n += len(b)
		return
	}
	e.buf = append(e.buf, b...)
	if e.w != nil && len(e.buf) >= writeChunk {
		e.flush()
	}
}

func (e *encoder) rawString(s string) {
	if e.err != nil {
		return
	}
	if e.count {
		e.n += len(s)
		return
	}
	e.buf = append(e.buf, s...)
	if e.w != nil && len(e.buf) >= writeChunk {
		e.flush()
	}
}

func (e *encoder) flush() {
	if e.w == nil || len(e.buf) == 0 || e.err != nil {
		return
	}
	n, err := e.w.Write(e.buf)
	e.n += n
	e.fail(err)
	e.buf = e.buf[:0]
}

// str appends s as a JSON string.
func (e *encoder) str(s string) {
	switch {
	case e.count:
		e.n += QuotedLen(s)
	case e.w != nil && len(s) > writeChunk:
		// In pieces cut at rune starts (a rune decodes the same on its
		// own), the quotes of each piece dropped.
		e.raw('"')
		for len(s) > 0 && e.err == nil {
			cut := min(len(s), writeChunk)
			for cut < len(s) && !runeStart(s[cut]) {
				cut++
			}
			start := len(e.buf)
			q := AppendString(e.buf, s[:cut])
			e.buf = append(q[:start], q[start+1:len(q)-1]...)
			s = s[cut:]
			e.flush()
		}
		e.raw('"')
	default:
		if len(s) > longString && cap(e.buf)-len(e.buf) < QuotedLen(s) {
			// Room for exactly the string and a little after it, once.
			e.buf = slices.Grow(e.buf, QuotedLen(s)+4096)
		}
		e.buf = AppendString(e.buf, s)
		if e.w != nil && len(e.buf) >= writeChunk {
			e.flush()
		}
	}
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
)

// marshal appends what Marshal makes of v, <, > and & as themselves
// (a MarshalJSON may escape them).
func (e *encoder) marshal(v any) {
	b, err := Marshal(v)
	if err != nil {
		e.fail(err)
		return
	}
	e.raw(UnescapeHTML(b)...)
}

func (e *encoder) value(v reflect.Value, depth int) {
	if e.err != nil {
		return
	}
	if !v.IsValid() {
		e.rawString("null")
		return
	}
	if depth > maxDepth {
		e.marshal(v.Interface())
		return
	}
	t := v.Type()
	switch {
	case t == rawMessageType:
		e.rawMessage(v.Bytes())
		return
	case t.Kind() == reflect.Pointer && t.Elem() == rawMessageType:
		if v.IsNil() {
			e.rawString("null")
		} else {
			e.rawMessage(v.Elem().Bytes())
		}
		return
	case t == numberType:
		e.marshal(v.Interface())
		return
	}
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) {
		if t.Kind() == reflect.Pointer && v.IsNil() {
			e.rawString("null")
			return
		}
		e.marshal(v.Interface())
		return
	}
	if v.CanAddr() && (reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		e.marshal(v.Addr().Interface())
		return
	}
	switch t.Kind() {
	case reflect.String:
		e.str(v.String())
	case reflect.Bool:
		if v.Bool() {
			e.rawString("true")
		} else {
			e.rawString("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var a [20]byte
		e.raw(strconv.AppendInt(a[:0], v.Int(), 10)...)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var a [20]byte
		e.raw(strconv.AppendUint(a[:0], v.Uint(), 10)...)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.rawString("null")
			return
		}
		e.value(v.Elem(), depth+1)
	case reflect.Struct:
		e.structValue(v, depth)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			e.marshal(v.Interface()) // base64, unless the elements marshal themselves
			return
		}
		if v.IsNil() {
			e.rawString("null")
			return
		}
		e.raw('[')
		for i := range v.Len() {
			if i > 0 {
				e.raw(',')
			}
			e.value(v.Index(i), depth+1)
		}
		e.raw(']')
	case reflect.Map:
		e.mapValue(v, depth)
	default: // floats, arrays, and what Marshal refuses
		e.marshal(v.Interface())
	}
}

// rawMessage appends a json.RawMessage as Marshal does: compacted, null
// when empty, an error when not JSON.
func (e *encoder) rawMessage(m []byte) {
	if m == nil {
		e.rawString("null")
		return
	}
	if !json.Valid(m) {
		e.marshal(json.RawMessage(m)) // Marshal's error
		return
	}
	if compact(m) {
		e.raw(UnescapeHTML(m)...) // what Marshal copies
		return
	}
	var b bytes.Buffer
	_ = json.Compact(&b, m) // valid
	e.raw(UnescapeHTML(b.Bytes())...)
}

// compact reports whether valid JSON has no white space outside its
// strings (inside them it is text).
func compact(m []byte) bool {
	in, esc := false, false
	for _, c := range m {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return false
		}
	}
	return true
}

func (e *encoder) structValue(v reflect.Value, depth int) {
	fields, ok := e.structFields(v.Type())
	if !ok {
		if v.CanAddr() {
			e.marshal(v.Addr().Interface())
		} else {
			e.marshal(v.Interface())
		}
		return
	}
	e.raw('{')
	first := true
	for _, f := range fields {
		fv := v.Field(f.index)
		if f.omitEmpty && isEmpty(fv) {
			continue
		}
		if !first {
			e.raw(',')
		}
		first = false
		e.raw(f.name...)
		e.value(fv, depth+1)
	}
	e.raw('}')
}

// structFields lists t's encoded fields in order, or reports false for a
// struct this encoder leaves to Marshal: an embedded field, or a tag
// option it does not read.
func (e *encoder) structFields(t reflect.Type) ([]field, bool) {
	if fs, ok := e.fields[t]; ok {
		return fs, fs != nil
	}
	if e.fields == nil {
		e.fields = map[reflect.Type][]field{}
	}
	fs := []field{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			fs = nil
			break
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		omit := false
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "":
			case "omitempty":
				omit = true
			default: // string, omitzero, ...
				fs = nil
			}
		}
		if fs == nil {
			break
		}
		if name == "" {
			name = sf.Name
		} else if !validName(name) {
			fs = nil
			break
		}
		q := AppendString(nil, name)
		fs = append(fs, field{index: i, name: append(q, ':'), omitEmpty: omit})
	}
	if fs != nil && hasDuplicate(fs) {
		fs = nil // encoding/json's rules decide which one goes
	}
	e.fields[t] = fs
	return fs, fs != nil
}

// validName accepts the tag names every Loop type uses: letters, digits
// and a few punctuation marks; Marshal decides about the rest.
func validName(s string) bool {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '$' || c == '/') {
			return false
		}
	}
	return true
}

func hasDuplicate(fs []field) bool {
	seen := make(map[string]bool, len(fs))
	for _, f := range fs {
		if seen[string(f.name)] {
			return true
		}
		seen[string(f.name)] = true
	}
	return false
}

// isEmpty is omitempty's test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// mapValue encodes a map with string keys, its keys sorted as Marshal
// sorts them; other maps go to Marshal.
func (e *encoder) mapValue(v reflect.Value, depth int) {
	t := v.Type()
	if t.Key().Kind() != reflect.String || t.Key().Implements(textMarshalerType) {
		e.marshal(v.Interface())
		return
	}
	if v.IsNil() {
		e.rawString("null")
		return
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	e.raw('{')
	for i, k := range keys {
		if i > 0 {
			e.raw(',')
		}
		e.str(k.String())
		e.raw(':')
		e.value(v.MapIndex(k), depth+1)
	}
	e.raw('}')
}
