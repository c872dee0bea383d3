package wire

// maxDepth is encoding/json's nesting limit. A value nested deeper can never
// be decoded (classify would refuse it), so the scanner refuses it as soon
// as it opens one level too many, instead of waiting for it to close.
const maxDepth = 10000

// scanState is where a jsonScanner is in the JSON grammar.
type scanState uint8

const (
	scanValue      scanState = iota // a value is expected
	scanValueOrEnd                  // after '[': a value or ']'
	scanKeyOrEnd                    // after '{': a key or '}'
	scanKey                         // after ',' in an object: a key
	scanColon                       // after a key: ':'
	scanAfterValue                  // after a value inside a container: ',' or its close
	scanString                      // inside a string
	scanEscape                      // after '\' in a string
	scanHex                         // inside \uXXXX
	scanLiteral                     // inside true, false or null
	scanMinus                       // after a number's '-'
	scanZero                        // a number's integer part is 0
	scanInt                         // in a number's integer part
	scanDot                         // after a number's '.'
	scanFrac                        // in a number's fraction
	scanE                           // after a number's 'e'
	scanESign                       // after the exponent's sign
	scanExp                         // in the exponent
	scanDone                        // the top-level value is complete
	scanError                       // the input cannot be JSON any more
)

// jsonScanner checks JSON syntax one byte at a time and keeps its state
// between calls, so that a value arriving in pieces (lines of a
// pretty-printed NDJSON value, reads of an LSP body) is scanned once in all,
// whatever the pieces: framing costs O(bytes). It checks what
// encoding/json's Valid checks, the nesting limit included, and nothing
// else (like Valid, it accepts invalid UTF-8).
type jsonScanner struct {
	state scanState
	stack []byte // the open containers, '{' or '['
	key   bool   // the string being scanned is an object key
	hex   int    // hex digits left in a \u escape
	lit   string // bytes left in a literal
	// scanned counts the bytes scanned, for the tests that bound the
	// framing's work.
	scanned int64
}

// reset makes the scanner ready for a new top-level value, keeping its
// stack's memory.
func (s *jsonScanner) reset() {
	scanned := s.scanned
	*s = jsonScanner{stack: s.stack[:0], scanned: scanned}
}

// ended reports whether the scanner stopped: the value is complete or
// cannot be valid.
func (s *jsonScanner) ended() bool { return s.state == scanDone || s.state == scanError }

// scan scans b until the top-level value ends or turns out invalid, and
// returns how many bytes of b it took. After a complete value it stops
// right after its last byte; after an error, right before the byte that
// caused it. A top-level number ends only at the byte after it, which is
// not taken; eof ends it at the end of input.
func (s *jsonScanner) scan(b []byte) int {
	i := 0
	for i < len(b) && !s.ended() {
		c := b[i]
		switch s.state {
		case scanString:
			// The hot path: a long string is one tight loop.
			for i < len(b) {
				c = b[i]
				if c == '"' || c == '\\' || c < 0x20 {
					break
				}
				i++
			}
			if i == len(b) {
				continue
			}
			switch {
			case c == '"':
				if s.key {
					s.state = scanColon
				} else {
					s.endValue()
				}
			case c == '\\':
				s.state = scanEscape
			default:
				s.state = scanError // a control character
				continue
			}
		case scanEscape:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.state = scanString
			case 'u':
				s.state, s.hex = scanHex, 4
			default:
				s.state = scanError
				continue
			}
		case scanHex:
			if !isHex(c) {
				s.state = scanError
				continue
			}
			if s.hex--; s.hex == 0 {
				s.state = scanString
			}
		case scanLiteral:
			if c != s.lit[0] {
				s.state = scanError
				continue
			}
			if s.lit = s.lit[1:]; s.lit == "" {
				s.endValue()
			}
		case scanMinus, scanZero, scanInt, scanDot, scanFrac, scanE, scanESign, scanExp:
			if !s.number(c) {
				// The number ended before c, which belongs to what follows.
				if s.state != scanError {
					s.endValue()
				}
				continue
			}
		default:
			if !s.structural(c) {
				continue // c is not taken
			}
		}
		i++
	}
	s.scanned += int64(i)
	return i
}

// eof ends the input: a top-level number is complete there.
func (s *jsonScanner) eof() {
	switch s.state {
	case scanZero, scanInt, scanFrac, scanExp:
		if len(s.stack) == 0 {
			s.state = scanDone
		}
	}
}

// structural handles c where a value, a key, a colon, a comma or a close is
// expected. It returns false when c was not taken (an error).
func (s *jsonScanner) structural(c byte) bool {
	if isSpace(c) {
		return true
	}
	switch s.state {
	case scanKeyOrEnd, scanKey:
		switch {
		case c == '"':
			s.state, s.key = scanString, true
		case c == '}' && s.state == scanKeyOrEnd:
			s.close()
		default:
			s.state = scanError
			return false
		}
		return true
	case scanColon:
		if c != ':' {
			s.state = scanError
			return false
		}
		s.state = scanValue
		return true
	case scanAfterValue:
		top := s.stack[len(s.stack)-1]
		switch {
		case c == ',' && top == '{':
			s.state = scanKey
		case c == ',':
			s.state = scanValue
		case c == '}' && top == '{', c == ']' && top == '[':
			s.close()
		default:
			s.state = scanError
			return false
		}
		return true
	}
	// scanValue or scanValueOrEnd: a value begins.
	switch {
	case c == '{' || c == '[':
		if len(s.stack) == maxDepth {
			s.state = scanError
			return false
		}
		s.stack = append(s.stack, c)
		s.state = scanValueOrEnd
		if c == '{' {
			s.state = scanKeyOrEnd
		}
	case c == ']' && s.state == scanValueOrEnd:
		s.close()
	case c == '"':
		s.state, s.key = scanString, false
	case c == '-':
		s.state = scanMinus
	case c == '0':
		s.state = scanZero
	case '1' <= c && c <= '9':
		s.state = scanInt
	case c == 't':
		s.state, s.lit = scanLiteral, "rue"
	case c == 'f':
		s.state, s.lit = scanLiteral, "alse"
	case c == 'n':
		s.state, s.lit = scanLiteral, "ull"
	default:
		s.state = scanError
		return false
	}
	return true
}

// number takes c into the number being scanned, or returns false when c
// does not continue it: then the number is complete, unless it stopped
// where it cannot (after '-', '.', 'e' or the exponent's sign), which is
// an error.
func (s *jsonScanner) number(c byte) bool {
	digit := '0' <= c && c <= '9'
	switch s.state {
	case scanMinus:
		switch {
		case c == '0':
			s.state = scanZero
		case digit:
			s.state = scanInt
		default:
			s.state = scanError
			return false
		}
	case scanZero, scanInt:
		switch {
		case digit && s.state == scanInt:
		case c == '.':
			s.state = scanDot
		case c == 'e' || c == 'E':
			s.state = scanE
		default:
			return false
		}
	case scanDot:
		if !digit {
			s.state = scanError
			return false
		}
		s.state = scanFrac
	case scanFrac:
		switch {
		case digit:
		case c == 'e' || c == 'E':
			s.state = scanE
		default:
			return false
		}
	case scanE:
		switch {
		case c == '+' || c == '-':
			s.state = scanESign
		case digit:
			s.state = scanExp
		default:
			s.state = scanError
			return false
		}
	case scanESign:
		if !digit {
			s.state = scanError
			return false
		}
		s.state = scanExp
	case scanExp:
		if !digit {
			return false
		}
	}
	return true
}

// close pops the innermost container, which just closed.
func (s *jsonScanner) close() {
	s.stack = s.stack[:len(s.stack)-1]
	s.endValue()
}

// endValue moves past a complete value.
func (s *jsonScanner) endValue() {
	if len(s.stack) == 0 {
		s.state = scanDone
		return
	}
	s.state = scanAfterValue
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
