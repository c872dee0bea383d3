package jsonenc

import (
	"slices"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string, byte for byte as
// Marshal writes a string: no HTML escaping, invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 escaped. Into a dst with QuotedLen(s) bytes to spare
// it allocates nothing, so a long string costs the one buffer the caller
// sized; encoding/json grows its own buffer step by step and then copies
// it out, which for a 150 MB text leaves several times that in garbage
// (docs/performance.md, "Import").
func AppendString(dst []byte, s string) []byte {
	dst = slices.Grow(dst, len(s)+2)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// QuotedLen is len(AppendString(nil, s)): what s takes as a JSON string.
func QuotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b >= 0x20 && b != '"' && b != '\\':
				n++
			case b == '"', b == '\\', b == '\b', b == '\f', b == '\n', b == '\r', b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if (c == utf8.RuneError && size == 1) || c == '\u2028' || c == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

const hexDigits = "0123456789abcdef"
