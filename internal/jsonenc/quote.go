package jsonenc

import "unicode/utf8"

// plain marks the bytes AppendString copies as they are: printable ASCII
// but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hex = "0123456789abcdef"

// longString is the length from which AppendString counts the room a
// string takes (QuotedLen) instead of taking twice its length: twice a
// 50 MB text is 100 MB.
const longString = 64 << 10

// AppendString appends s as a JSON string, byte for byte as Marshal writes
// it (no HTML escaping; U+2028 and U+2029 escaped; invalid UTF-8 becomes
// U+FFFD). Mostly plain bytes between quotes, so they are written by
// index into room made once: twice s's length is enough for every byte
// but the rare ones that take six (a control character, an invalid byte),
// which make more. A long string gets room for exactly what it becomes.
func AppendString[T string | []byte](out []byte, s T) []byte {
	j := len(out)
	room, per := 2*len(s)+2, 2 // per: the room kept for each byte left
	if len(s) > longString {
		room, per = QuotedLen(s), 0
	}
	if cap(out)-len(out) < room {
		size := len(out) + room
		if per != 0 {
			size = max(size, 2*cap(out)) // amortized, for appends of short strings
		}
		grown := make([]byte, len(out), size)
		copy(grown, out)
		out = grown
	}
	buf := out[:cap(out)]
	buf[j] = '"'
	j++
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			// A run of plain bytes is copied at once.
			k := i + 1
			for k < len(s) && plain[s[k]] {
				k++
			}
			j += copy(buf[j:], s[i:k])
			i = k
			continue
		}
		if c < utf8.RuneSelf {
			i++
			switch c {
			case '"', '\\':
				buf[j], buf[j+1] = '\\', c
			case '\n':
				buf[j], buf[j+1] = '\\', 'n'
			case '\r':
				buf[j], buf[j+1] = '\\', 'r'
			case '\t':
				buf[j], buf[j+1] = '\\', 't'
			case '\b':
				buf[j], buf[j+1] = '\\', 'b'
			case '\f':
				buf[j], buf[j+1] = '\\', 'f'
			default:
				buf, j = appendWide(buf, j, per*(len(s)-i), '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
				continue
			}
			j += 2
			continue
		}
		r, size := decodeRune(s, i)
		switch {
		case r == utf8.RuneError && size == 1:
			buf, j = appendWide(buf, j, per*(len(s)-i-1), '\\', 'u', 'f', 'f', 'f', 'd')
		case r == '\u2028' || r == '\u2029':
			// Escaped as encoding/json does; three bytes become six.
			buf, j = appendWide(buf, j, per*(len(s)-i-size), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			j += copy(buf[j:], s[i:i+size])
		}
		i += size
	}
	buf[j] = '"'
	return buf[:j+1]
}

// appendWide writes a six-byte escape at buf[j:], keeping room for more
// bytes (what the rest of the input may take) and the closing quote.
func appendWide(buf []byte, j, more int, e ...byte) ([]byte, int) {
	if need := j + len(e) + more + 1; need > len(buf) {
		grown := make([]byte, max(need, 2*len(buf)))
		copy(grown, buf[:j])
		buf = grown
	}
	return buf, j + copy(buf[j:], e)
}

// decodeRune is utf8.DecodeRune of s[i:], for either kind of s, without
// copying it.
func decodeRune[T string | []byte](s T, i int) (rune, int) {
	return utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
}

// QuotedLen is the length of AppendString(nil, s).
func QuotedLen[T string | []byte](s T) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case plain[c]:
			n++
			i++
		case c < utf8.RuneSelf:
			switch c {
			case '"', '\\', '\n', '\r', '\t', '\b', '\f':
				n += 2
			default:
				n += 6
			}
			i++
		default:
			r, size := decodeRune(s, i)
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				n += 6
			} else {
				n += size
			}
			i += size
		}
	}
	return n
}
