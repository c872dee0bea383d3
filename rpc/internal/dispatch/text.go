package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Text is a string param that may be large (a prompt's text, an attached
// file), decoded into a string of exactly its own length. encoding/json
// unquotes a string with escapes (every pasted line ends in \n) into a
// buffer the size of its encoded form and then copies that into the
// string: a 50 MB prompt cost 100 MB more on its way in, and the string
// was the second allocation. Text decodes it once, as encoding/json
// would: the same string, null leaving it as it was, and the same
// *json.UnmarshalTypeError for any other JSON value.
type Text string

// UnmarshalJSON decodes a JSON string.
func (t *Text) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		var s string // null, or the error a string field gets
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if !bytes.Equal(b, []byte("null")) {
			*t = Text(s)
		}
		return nil
	}
	in := b[1 : len(b)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		*t = Text(in) // the one copy
		return nil
	}
	var sb strings.Builder
	sb.Grow(unquote(in, nil))
	unquote(in, &sb)
	*t = Text(sb.String()) // no copy: the builder's bytes are the string's
	return nil
}

// unquote decodes the inside of a valid JSON string literal into out, or
// only counts its bytes when out is nil, and returns that count. It
// decodes as encoding/json does: invalid UTF-8 and unpaired surrogate
// escapes become U+FFFD.
func unquote(in []byte, out *strings.Builder) int {
	n := 0
	for i := 0; i < len(in); {
		// A run of bytes that stand for themselves goes at once.
		k := i
		for k < len(in) && in[k] != '\\' && in[k] < utf8.RuneSelf {
			k++
		}
		n += k - i
		if out != nil {
			out.Write(in[i:k])
		}
		if i = k; i == len(in) {
			break
		}
		r, size := rune(0), 0
		if in[i] != '\\' {
			r, size = utf8.DecodeRune(in[i:])
			if r != utf8.RuneError || size > 1 {
				n += size
				if out != nil {
					out.Write(in[i : i+size])
				}
				i += size
				continue
			}
			i++ // invalid UTF-8: U+FFFD, as r says
		} else {
			// An escape; the literal is valid, so it is whole.
			r, size = unescape(in[i:])
			i += size
		}
		n += utf8.RuneLen(r)
		if out != nil {
			out.WriteRune(r)
		}
	}
	return n
}

// unescape decodes the escape at the start of e, a pair of \u escapes
// of a surrogate pair included, and returns its rune and length.
func unescape(e []byte) (rune, int) {
	switch e[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
	default: // " \\ /
		return rune(e[1]), 2
	}
	r := hex4(e[2:6])
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(e) >= 12 && e[6] == '\\' && e[7] == 'u' {
		if d := utf16.DecodeRune(r, hex4(e[8:12])); d != utf8.RuneError {
			return d, 12
		}
	}
	return utf8.RuneError, 6
}

// hex4 is the value of four hex digits (valid: the literal is).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
