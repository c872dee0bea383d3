package jsonenc

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Raw is a JSON value inside bytes the caller holds unchanged, not a copy
// of it. Decoded with json.Unmarshal, a map[string]Raw costs its keys
// only, where json.RawMessage copies every member: a long text nested
// three objects deep in a line was copied three times before anything
// read it (docs/performance.md, "Import"). json.Unmarshal hands
// UnmarshalJSON a part of the very slice it decodes, so a Raw is valid as
// long as that slice is neither changed nor reused; do not decode a Raw
// with json.Decoder, whose buffer is reused.
type Raw []byte

// UnmarshalJSON keeps b itself.
func (r *Raw) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// MarshalJSON writes r as it is (encoding/json compacts it).
func (r Raw) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return r, nil
}

// DecodeString returns the JSON string literal s (quotes included)
// decoded exactly as json.Unmarshal decodes it into a string, and whether
// s is one. The string is built in one allocation of about len(s);
// json.Unmarshal allocates the unquoted bytes first, then copies them
// into the string.
func DecodeString(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	s = s[1 : len(s)-1]
	var b strings.Builder
	b.Grow(len(s))
	start := 0 // s[start:r] is still to be written as it is
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c >= ' ' && c != '"' && c != '\\' && c < utf8.RuneSelf:
			r++
			continue
		case c >= utf8.RuneSelf:
			rr, size := utf8.DecodeRune(s[r:])
			if rr != utf8.RuneError || size != 1 {
				r += size
				continue
			}
			// Invalid UTF-8 becomes U+FFFD, one byte at a time.
			b.Write(s[start:r])
			b.WriteRune(utf8.RuneError)
			r++
			start = r
			continue
		case c != '\\':
			// A quote or a control character: not a string literal.
			return "", false
		}
		b.Write(s[start:r])
		r++
		if r >= len(s) {
			return "", false
		}
		switch s[r] {
		case '"', '\\', '/', '\'':
			b.WriteByte(s[r])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			rr := hex4(s[r+1:])
			if rr < 0 {
				return "", false
			}
			r += 4
			if utf16.IsSurrogate(rr) {
				// A valid pair is one rune; anything else is U+FFFD,
				// and what follows is read on its own.
				if r+2 < len(s) && s[r+1] == '\\' && s[r+2] == 'u' {
					if dec := utf16.DecodeRune(rr, hex4(s[r+3:])); dec != utf8.RuneError {
						b.WriteRune(dec)
						r += 6
						break
					}
				}
				rr = utf8.RuneError
			}
			b.WriteRune(rr)
		default:
			return "", false
		}
		r++
		start = r
	}
	b.Write(s[start:])
	return b.String(), true
}

// hex4 reads four hex digits at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
