package dispatch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A prompt's text arrives as one JSON string in the params, and the params
// are the frame the wire read for this request alone (wire.Stream: an LSP
// body, an NDJSON line). Decoding the text into a string of its own
// (Text.UnmarshalJSON) made the frame and the text alive at once: two
// copies of a 50 MB prompt, and the frame garbage the moment the text
// existed (docs/performance.md, "One large prompt"). Decode instead
// unescapes a long text where it lies, in the frame, and the text is the
// frame's bytes: one copy.
//
// encoding/json gives an Unmarshaler no way to know that its input may be
// overwritten, so the long strings are taken out of the way: params are
// decoded with each long string replaced by a placeholder, the
// placeholders must all land in Text values (found by walking the decoded
// value), and only then are the strings unescaped in place and the Texts
// pointed at them. Anything else (a long string in a plain string field,
// a map, a key; an error of any kind) decodes the params as before, from
// bytes not yet changed, so the result and the errors are the same.

// longText is the raw length from which a string is decoded in place:
// params of every method but the prompts are capped below it (MaxParams).
const longText = 1 << 20

// inPlaceShare: the long strings are decoded in place only when their
// text makes up at least this share of the buffer they would keep alive,
// so that a text never keeps much else of its frame.
const inPlaceShare = 7.0 / 8

// span is the inside of a long string literal: data[from:to], quotes
// excluded.
type span struct{ from, to int }

// decodeInPlace decodes data into v when its long strings are all texts
// (see above), and reports whether it did. When it did, the texts are
// data's bytes: data must never be written again.
func decodeInPlace(data []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false
	}
	spans := longStrings(data)
	if len(spans) == 0 {
		return false
	}
	text := 0
	for _, s := range spans {
		n, ok := unquotedLen(data[s.from:s.to])
		if !ok {
			return false
		}
		text += n
	}
	if float64(text) < inPlaceShare*float64(cap(data)) {
		return false
	}
	prefix := "\x00loop-long-text:" + strconv.FormatUint(rand.Uint64(), 16) + ":"
	if err := json.Unmarshal(withPlaceholders(data, spans, prefix), v); err != nil {
		rv.Elem().SetZero()
		return false
	}
	texts := make([]reflect.Value, len(spans))
	if !claim(rv, prefix, texts) {
		rv.Elem().SetZero()
		return false
	}
	for _, t := range texts {
		if !t.IsValid() { // a long string that is not a Text's
			rv.Elem().SetZero()
			return false
		}
	}
	for i, s := range spans {
		n := unquoteInPlace(data[s.from:s.to])
		str := ""
		if n > 0 {
			str = unsafe.String(&data[s.from], n)
		}
		texts[i].SetString(str)
	}
	return true
}

// longStrings returns the string literals of data whose inside is at
// least longText bytes long. It follows only where strings begin and end
// (a quote, and a backslash escaping what follows it): for valid JSON
// these are its string literals; anything else is judged by the decoders.
func longStrings(data []byte) []span {
	var spans []span
	for i := 0; i < len(data); {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			break
		}
		from := i + q + 1
		to := closingQuote(data, from)
		if to < 0 {
			break
		}
		if to-from >= longText {
			spans = append(spans, span{from, to})
		}
		i = to + 1
	}
	return spans
}

// closingQuote returns the index of the quote that closes the string whose
// inside starts at from, or -1.
func closingQuote(data []byte, from int) int {
	for i := from; i < len(data); {
		k := bytes.IndexAny(data[i:], `"\`)
		if k < 0 {
			return -1
		}
		i += k
		if data[i] == '"' {
			return i
		}
		i += 2 // a backslash and the byte it escapes
	}
	return -1
}

// unquotedLen returns the length of the string the inside of a JSON
// string literal stands for, and false when the literal is not valid JSON
// or holds what encoding/json would replace (invalid UTF-8, an unpaired
// surrogate escape), which the caller leaves to the ordinary decoding.
func unquotedLen(in []byte) (int, bool) {
	n := 0
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c < ' ':
			return 0, false
		case c < utf8.RuneSelf && c != '\\':
			n++
			i++
		case c != '\\':
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false
			}
			n += size
			i += size
		default:
			size := escapeLen(in[i:])
			if size == 0 {
				return 0, false
			}
			r, used := unescape(in[i:])
			switch {
			case size == 6 && used == 6 && utf16.IsSurrogate(hex4(in[i+2:i+6])):
				return 0, false // an unpaired surrogate
			case used == 12 && escapeLen(in[i+6:]) != 6:
				return 0, false
			}
			n += utf8.RuneLen(r)
			i += used
		}
	}
	return n, true
}

// escapeLen is the length of the valid escape at the start of e, 0 when
// it is not one.
func escapeLen(e []byte) int {
	if len(e) < 2 {
		return 0
	}
	switch e[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(e) < 6 {
			return 0
		}
		for _, h := range e[2:6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return 0
			}
		}
		return 6
	}
	return 0
}

// unquoteInPlace unescapes the inside of a valid JSON string literal
// (unquotedLen said so) into its own first bytes and returns how many it
// wrote. It decodes as unquote does. Every escape is at least as long as
// what it stands for, so the bytes written never overtake those read.
func unquoteInPlace(b []byte) int {
	w := 0
	for i := 0; i < len(b); {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			k = len(b) - i
		}
		w += copy(b[w:], b[i:i+k])
		if i += k; i == len(b) {
			break
		}
		r, size := unescape(b[i:])
		i += size
		w += utf8.EncodeRune(b[w:], r)
	}
	return w
}

// withPlaceholders is data with the inside of each span replaced by
// prefix and its index, escaped as JSON.
func withPlaceholders(data []byte, spans []span, prefix string) []byte {
	quoted := strings.Replace(prefix, "\x00", `\u0000`, 1)
	size := len(data)
	for _, s := range spans {
		size -= s.to - s.from
	}
	out := make([]byte, 0, size+len(spans)*(len(quoted)+20))
	last := 0
	for i, s := range spans {
		out = append(out, data[last:s.from]...)
		out = append(out, quoted...)
		out = strconv.AppendInt(out, int64(i), 10)
		last = s.to
	}
	return append(out, data[last:]...)
}

var textType = reflect.TypeFor[Text]()

// claim finds in v the Texts that hold a placeholder of prefix and puts
// each at its index in texts. It returns false when a placeholder cannot
// be replaced there (a Text that cannot be set) or is met twice.
func claim(v reflect.Value, prefix string, texts []reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return true
		}
		return claim(v.Elem(), prefix, texts)
	case reflect.Struct:
		for i := range v.NumField() {
			if !claim(v.Field(i), prefix, texts) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if !claim(v.Index(i), prefix, texts) {
				return false
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if !claim(it.Value(), prefix, texts) {
				return false
			}
		}
	case reflect.String:
		rest, ok := strings.CutPrefix(v.String(), prefix)
		if !ok || v.Type() != textType {
			return true // a placeholder elsewhere stays unclaimed
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(texts) || texts[i].IsValid() || !v.CanSet() {
			return false
		}
		texts[i] = v
	}
	return true
}
