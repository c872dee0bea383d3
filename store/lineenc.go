package store

import (
	"unicode/utf8"

	"github.com/loopdev/loop/internal/jsonenc"
)

// lineEnc encodes a log line (recordjson.go) into buf, or, with a sink,
// a piece at a time: buf goes to the sink whenever it holds a piece, and
// a long string is escaped a piece at a time into it. A message holding a
// 50 MB prompt is so counted and then written without its line ever being
// whole in memory (encodeBatch, writeLines; docs/performance.md, "One
// large prompt").
type lineEnc struct {
	buf []byte
	// sink takes each piece; nil keeps the whole line in buf.
	sink func([]byte) error
	err  error
}

// linePiece is the size of the pieces a sink gets.
const linePiece = 32 << 10

func (e *lineEnc) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// spill hands buf to the sink once it holds a piece.
func (e *lineEnc) spill() {
	if e.sink != nil && len(e.buf) >= linePiece {
		e.flush()
	}
}

// flush hands what buf holds to the sink.
func (e *lineEnc) flush() {
	if e.sink == nil || len(e.buf) == 0 {
		return
	}
	if e.err == nil {
		e.fail(e.sink(e.buf))
	}
	e.buf = e.buf[:0]
}

func (e *lineEnc) raw(s string) {
	e.buf = append(e.buf, s...)
	e.spill()
}

// str writes s as a JSON string, byte for byte as jsonenc.AppendString
// does: with a sink, a long one in pieces cut at rune starts (a rune
// escapes the same on its own), each piece's quotes dropped.
func (e *lineEnc) str(s string) {
	if e.sink == nil || len(s) <= linePiece {
		e.buf = jsonenc.AppendString(e.buf, s)
		e.spill()
		return
	}
	e.buf = append(e.buf, '"')
	for len(s) > 0 {
		cut := min(len(s), linePiece)
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		start := len(e.buf)
		q := jsonenc.AppendString(e.buf, s[:cut])
		e.buf = append(q[:start], q[start+1:len(q)-1]...)
		s = s[cut:]
		e.flush()
	}
	e.raw(`"`)
}

// member writes a string member that is left out when empty (omitempty);
// key is `,"name":`.
func (e *lineEnc) member(key, s string) {
	if s == "" {
		return
	}
	e.raw(key)
	e.str(s)
}
