// Package textcheck finds strings in JSON params that are not valid
// Unicode: invalid UTF-8 bytes, and \u escapes of unpaired UTF-16
// surrogates. encoding/json replaces both with U+FFFD without a word, so
// a request would go on altered; Loop refuses it instead
// (docs/protocol.md, "Messages the server accepts"). Both dialects check
// params with it before decoding them.
package textcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Invalid names the first string of a document that is not valid Unicode.
type Invalid struct {
	// Path leads to the string: member names (string) and array indices
	// (int). For a member name that is itself invalid, it leads to the
	// object holding it.
	Path []any
	// Key is true when the invalid string is a member name.
	Key bool
	// Reason says what is wrong: "invalid UTF-8" or "an unpaired
	// surrogate \ud800".
	Reason string
}

// Field is Path written the way messages name a field: files[0].text.
func (iv *Invalid) Field() string {
	var b strings.Builder
	for _, p := range iv.Path {
		switch p := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// Error says which string is wrong and why.
func (iv *Invalid) Error() string {
	f := iv.Field()
	switch {
	case iv.Key && f == "":
		return "a member name is not valid Unicode (" + iv.Reason + ")"
	case iv.Key:
		return "a member name in " + f + " is not valid Unicode (" + iv.Reason + ")"
	case f == "":
		return "a string is not valid Unicode (" + iv.Reason + ")"
	}
	return f + " is not valid Unicode (" + iv.Reason + ")"
}

// Top is the first member name of Path, "" when there is none.
func (iv *Invalid) Top() string {
	if len(iv.Path) > 0 {
		if s, ok := iv.Path[0].(string); ok {
			return s
		}
	}
	return ""
}

// maxDepth matches encoding/json's nesting limit: deeper input is not
// valid for it either.
const maxDepth = 10000

// Find returns the first string (member names included) of the JSON
// document data that is not valid Unicode, or nil when every string is
// valid. For input that is not valid JSON it returns nil, or what it found
// before the syntax error: the decoder reports such input itself.
func Find(data []byte) *Invalid {
	if utf8.Valid(data) && !maySurrogate(data) {
		return nil // the common case, at memchr speed
	}
	s := scanner{b: data}
	s.value(0)
	return s.bad
}

// maySurrogate reports whether data has a \u escape in the surrogate range
// D800-DFFF (or what looks like one: `\\ud800` is a backslash and text).
func maySurrogate(data []byte) bool {
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i+2 <= len(data) && (data[i] == 'd' || data[i] == 'D') && strings.IndexByte("89abcdefABCDEF", data[i+1]) >= 0 {
			return true
		}
	}
}

type scanner struct {
	b    []byte
	i    int
	path []any
	bad  *Invalid
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and reports whether the next byte is c, taking it.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// value scans one value; false on a syntax error or once bad is set.
func (s *scanner) value(depth int) bool {
	s.space()
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		if s.next('}') {
			return true
		}
		for {
			s.space()
			key, ok := s.str(true)
			if !ok || !s.next(':') {
				return false
			}
			s.path = append(s.path, key)
			if !s.value(depth + 1) {
				return false
			}
			s.path = s.path[:len(s.path)-1]
			if s.next(',') {
				continue
			}
			return s.next('}')
		}
	case '[':
		s.i++
		if s.next(']') {
			return true
		}
		for n := 0; ; n++ {
			s.path = append(s.path, n)
			if !s.value(depth + 1) {
				return false
			}
			s.path = s.path[:len(s.path)-1]
			if s.next(',') {
				continue
			}
			return s.next(']')
		}
	case '"':
		_, ok := s.str(false)
		return ok
	}
	// A number, true, false or null: its end is all that matters.
	for s.i < len(s.b) && strings.IndexByte(",]} \t\r\n", s.b[s.i]) < 0 {
		s.i++
	}
	return true
}

// str scans the string at s.i. For a member name it returns the name,
// decoded. It sets bad and returns false when the string is not valid
// Unicode.
func (s *scanner) str(key bool) (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !key {
				return "", true
			}
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var name string
			if json.Unmarshal(raw, &name) != nil {
				return "", false
			}
			return name, true
		case c == '\\':
			escaped = true
			if s.i+1 < len(s.b) && s.b[s.i+1] == 'u' {
				r, ok := hex4(s.b, s.i+2)
				if !ok {
					return "", false
				}
				switch {
				case 0xD800 <= r && r < 0xDC00:
					if lo, ok := hex4(s.b, s.i+8); ok && s.b[s.i+6] == '\\' && s.b[s.i+7] == 'u' && 0xDC00 <= lo && lo < 0xE000 {
						s.i += 12
						continue
					}
					return "", s.fail(key, fmt.Sprintf(`an unpaired surrogate \u%04x`, r))
				case 0xDC00 <= r && r < 0xE000:
					return "", s.fail(key, fmt.Sprintf(`an unpaired surrogate \u%04x`, r))
				}
				s.i += 6
				continue
			}
			s.i += 2
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return "", s.fail(key, "invalid UTF-8")
			}
			s.i += size
		}
	}
	return "", false
}

func (s *scanner) fail(key bool, reason string) bool {
	s.bad = &Invalid{Path: append([]any(nil), s.path...), Key: key, Reason: reason}
	return false
}

// hex4 decodes the four hex digits at b[i:], reporting false when there
// are not four.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
