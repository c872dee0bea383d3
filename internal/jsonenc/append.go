package jsonenc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	e.top(v)
	return e.buf, e.err
}

// AppendUpTo is Append that gives up, reporting false, once the encoding
// would pass limit bytes. Given up, it returns dst with the room it grew
// (its length that of dst), so that a caller may keep the room.
func AppendUpTo(dst []byte, v any, limit int) ([]byte, bool, error) {
	e := encoder{buf: dst, limit: len(dst) + limit}
	e.top(v)
	if e.err == errLimit {
		return e.buf[:len(dst)], false, nil
	}
	return e.buf, true, e.err
}

// Size is the length of Append's encoding of v, counted without building
// it.
func Size(v any) (int, error) {
	e := encoder{count: true}
	e.top(v)
	return e.n, e.err
}

// Write writes Append's encoding of v to w as it is made, in pieces of
// some 32 KiB; it returns the bytes written. When v cannot be encoded (a
// NaN, a failing MarshalJSON) part of it may have been written: check it
// with Size first where a partial write would matter.
func Write(w io.Writer, v any) (int, error) {
	e := encoder{w: w, buf: make([]byte, 0, writeChunk+writeChunk/8)}
	e.top(v)
	e.flush()
	return e.n, e.err
}

// writeChunk is the size of Write's pieces.
const writeChunk = 32 << 10

// maxDepth bounds nesting (a cycle through pointers); encoding/json
// reports the cycle, so Marshal does the reporting.
const maxDepth = 1000

var errLimit = errors.New("jsonenc: limit reached")

type encoder struct {
	buf   []byte
	w     io.Writer // Write: buf goes to w as it fills
	count bool      // Size: only n counts
	limit int       // AppendUpTo: the most buf may hold; 0 for no limit
	n     int       // bytes counted, or written to w
	err   error
}

type encFunc func(e *encoder, v reflect.Value, depth int)

func (e *encoder) top(v any) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		e.rawString("null")
		return
	}
	e.value(rv, 0)
}

func (e *encoder) value(v reflect.Value, depth int) {
	if e.err != nil {
		return
	}
	if depth > maxDepth {
		e.marshal(v.Interface())
		return
	}
	encoderOf(v.Type())(e, v, depth)
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// grew checks a limit or a writer's chunk after buf grew.
func (e *encoder) grew() {
	switch {
	case e.limit > 0 && len(e.buf) > e.limit:
		e.fail(errLimit)
	case e.w != nil && len(e.buf) >= writeChunk:
		e.flush()
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
	e.grew()
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
	e.grew()
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
	case e.err != nil:
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
		if e.limit > 0 && len(e.buf)+len(s) > e.limit {
			e.fail(errLimit)
			return
		}
		if len(s) > longString {
			if n := QuotedLen(s); cap(e.buf)-len(e.buf) < n {
				// Room for exactly the string and a little after it, once.
				grown := make([]byte, len(e.buf), len(e.buf)+n+4096)
				copy(grown, e.buf)
				e.buf = grown
			}
		}
		e.buf = AppendString(e.buf, s)
		e.grew()
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
	if e.err != nil {
		return
	}
	b, err := Marshal(v)
	if err != nil {
		e.fail(err)
		return
	}
	e.raw(UnescapeHTML(b)...)
}

// typeEncoders holds each type's encoder once built, as encoding/json
// keeps its own: a memo of what a type's encoding is, which never
// changes once made.
var typeEncoders sync.Map // reflect.Type -> encFunc

// encoderOf returns t's encoder, building it once. A type that holds
// itself gets, while it is built, one that waits for it (as encoding/json
// does).
func encoderOf(t reflect.Type) encFunc {
	if f, ok := typeEncoders.Load(t); ok {
		return f.(encFunc)
	}
	var (
		wg sync.WaitGroup
		f  encFunc
	)
	wg.Add(1)
	fi, loaded := typeEncoders.LoadOrStore(t, encFunc(func(e *encoder, v reflect.Value, depth int) {
		wg.Wait()
		f(e, v, depth)
	}))
	if loaded {
		return fi.(encFunc)
	}
	f = build(t)
	wg.Done()
	typeEncoders.Store(t, f)
	return f
}

func marshalEnc(e *encoder, v reflect.Value, _ int) {
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		e.rawString("null")
		return
	}
	e.marshal(v.Interface())
}

func build(t reflect.Type) encFunc {
	switch {
	case t == rawMessageType:
		return func(e *encoder, v reflect.Value, _ int) { e.rawMessage(v.Bytes()) }
	case t.Kind() == reflect.Pointer && t.Elem() == rawMessageType:
		return func(e *encoder, v reflect.Value, _ int) {
			if v.IsNil() {
				e.rawString("null")
			} else {
				e.rawMessage(v.Elem().Bytes())
			}
		}
	case t == numberType, t.Implements(marshalerType), t.Implements(textMarshalerType):
		return marshalEnc
	}
	base := buildKind(t)
	if t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		// As encoding/json: the pointer's method when the value is addressable.
		return func(e *encoder, v reflect.Value, depth int) {
			if v.CanAddr() {
				e.marshal(v.Addr().Interface())
				return
			}
			base(e, v, depth)
		}
	}
	return base
}

func buildKind(t reflect.Type) encFunc {
	switch t.Kind() {
	case reflect.String:
		return func(e *encoder, v reflect.Value, _ int) { e.str(v.String()) }
	case reflect.Bool:
		return func(e *encoder, v reflect.Value, _ int) {
			if v.Bool() {
				e.rawString("true")
			} else {
				e.rawString("false")
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(e *encoder, v reflect.Value, _ int) {
			var a [20]byte
			e.raw(strconv.AppendInt(a[:0], v.Int(), 10)...)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(e *encoder, v reflect.Value, _ int) {
			var a [20]byte
			e.raw(strconv.AppendUint(a[:0], v.Uint(), 10)...)
		}
	case reflect.Float32, reflect.Float64:
		bits := t.Bits()
		return func(e *encoder, v reflect.Value, _ int) {
			f := v.Float()
			if math.IsInf(f, 0) || math.IsNaN(f) {
				e.marshal(v.Interface()) // Marshal's error
				return
			}
			var a [32]byte
			e.raw(appendFloat(a[:0], f, bits)...)
		}
	case reflect.Pointer:
		return func(e *encoder, v reflect.Value, depth int) {
			if v.IsNil() {
				e.rawString("null")
				return
			}
			e.value(v.Elem(), depth+1)
		}
	case reflect.Interface:
		return func(e *encoder, v reflect.Value, depth int) {
			if v.IsNil() {
				e.rawString("null")
				return
			}
			e.value(v.Elem(), depth+1)
		}
	case reflect.Struct:
		return structEncoder(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return marshalEnc // base64, unless the elements marshal themselves
		}
		elem := t.Elem()
		return func(e *encoder, v reflect.Value, depth int) {
			if v.IsNil() {
				e.rawString("null")
				return
			}
			f := encoderOf(elem)
			e.raw('[')
			for i := range v.Len() {
				if i > 0 {
					e.raw(',')
				}
				if depth+1 > maxDepth {
					e.value(v.Index(i), depth+1)
				} else {
					f(e, v.Index(i), depth+1)
				}
			}
			e.raw(']')
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key().Implements(textMarshalerType) {
			return marshalEnc
		}
		return func(e *encoder, v reflect.Value, depth int) { e.mapValue(v, depth) }
	}
	return marshalEnc // arrays, and what Marshal refuses
}

// appendFloat writes a finite float as encoding/json does: the shortest
// decimal that reads back the same, in exponent form below 1e-6 and from
// 1e21 on, the exponent without a leading zero.
func appendFloat(b []byte, f float64, bits int) []byte {
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// rawMessage appends a json.RawMessage as Marshal does: compacted, null
// when nil, an error when not JSON.
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

type field struct {
	index     int
	name      []byte // `"name":`
	omitEmpty bool
	enc       encFunc
}

// structEncoder encodes t's fields in order, or leaves t to Marshal: an
// embedded field, a tag option this file does not read, a name it does
// not check, or two fields of one name (encoding/json's rules decide).
func structEncoder(t reflect.Type) encFunc {
	fs := []field{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return marshalEnc
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
				return marshalEnc
			}
		}
		if name == "" {
			name = sf.Name
		} else if !validName(name) {
			return marshalEnc
		}
		if seen[name] {
			return marshalEnc
		}
		seen[name] = true
		q := AppendString(nil, name)
		fs = append(fs, field{index: i, name: append(q, ':'), omitEmpty: omit, enc: encoderOf(sf.Type)})
	}
	return func(e *encoder, v reflect.Value, depth int) {
		e.raw('{')
		first := true
		for i := range fs {
			f := &fs[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if !first {
				e.raw(',')
			}
			first = false
			e.raw(f.name...)
			if depth+1 > maxDepth {
				e.value(fv, depth+1)
			} else {
				f.enc(e, fv, depth+1)
			}
		}
		e.raw('}')
	}
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
// sorts them.
func (e *encoder) mapValue(v reflect.Value, depth int) {
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
