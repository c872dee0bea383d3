package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/redact"
)

// A prompt's text or a request's body of 50 MB used to be encoded or
// copied whole into a block of its own to wait for the flusher: one more
// copy of the text beside the history's and the request body's. A long
// line instead waits as its parts, the text or the body itself among
// them (a string is immutable, and a request body is never written to
// once made), and the flusher writes it a piece at a time
// (docs/performance.md, "One large prompt").

// longLine is one record's line in parts: head, then text as a JSON
// string's inside, raw as it is or value encoded, then tail (which ends
// the line).
type longLine struct {
	head []byte
	text string
	raw  []byte
	// or value's encoding (jsonenc.Write, which Size has checked)
	value any
	tail  []byte
	size  int // the line's length
}

// longPart is the size from which a record's text or body waits as a
// part of its line rather than copied into a block.
const longPart = blockSize

// textMember is how a prompt record's text begins when it is empty.
const textMember = `"input":{"text":""`

// longPrompt returns r's line as parts when its input text is long: the
// record encoded without the text, cut where the text goes. r is
// unchanged after it returns.
func longPrompt(r *Record) (*longLine, error) {
	text := r.Input.Text
	r.Input.Text = ""
	head, body, err := encodeParts(r)
	r.Input.Text = text
	if err != nil {
		return nil, err
	}
	// Members before the input are strings and numbers, in whose
	// encoding a quote is always escaped: the first match is the input.
	i := bytes.Index(head, []byte(textMember))
	if body != nil || i < 0 {
		return nil, nil
	}
	at := i + len(textMember) - 1 // the closing quote
	l := &longLine{head: head[:at], text: text, tail: head[at:]}
	l.size = len(l.head) + jsonenc.QuotedLen(text) - 2 + len(l.tail)
	return l, nil
}

// logicalOf sets r.Logical to v's encoding, or, when that is long,
// returns r's line as parts, v among them, encoded as it is written.
func (w *Writer) logicalOf(r *Record, v any) (*longLine, error) {
	n, err := jsonenc.Size(v)
	if err != nil {
		return nil, err
	}
	if n < longPart || r.Input != nil {
		r.Logical, err = jsonenc.Append(make([]byte, 0, n), v)
		return nil, err
	}
	r.Logical = json.RawMessage("0")
	head, body, err := encodeParts(r)
	r.Logical = nil
	if err != nil {
		return nil, err
	}
	// The members before it are strings and numbers (a call record's),
	// in whose encoding a quote is always escaped.
	i := bytes.Index(head, []byte(logicalMember))
	if body != nil || i < 0 {
		r.Logical, err = jsonenc.Append(make([]byte, 0, n), v)
		return nil, err
	}
	at := i + len(logicalMember) - 1
	return &longLine{head: head[:at], value: v, tail: head[at+1:], size: len(head) - 1 + n}, nil
}

// logicalMember is how a record's logical request begins when it is 0.
const logicalMember = `"logical":0`

// pieces calls f with the line's bytes a piece at a time; the text is
// escaped as jsonenc.AppendString does, in pieces cut at rune starts (a
// rune escapes the same on its own), each without its quotes.
func (l *longLine) pieces(f func([]byte) error) error {
	if err := f(l.head); err != nil {
		return err
	}
	const piece = 32 << 10
	for raw := l.raw; len(raw) > 0; {
		n := min(len(raw), piece)
		if err := f(raw[:n]); err != nil {
			return err
		}
		raw = raw[n:]
	}
	if l.value != nil {
		if _, err := jsonenc.Write(pieceWriter(f), l.value); err != nil {
			return err
		}
	}
	var buf []byte
	for s := l.text; len(s) > 0; {
		cut := min(len(s), piece)
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		buf = jsonenc.AppendString(buf[:0], s[:cut])
		if err := f(buf[1 : len(buf)-1]); err != nil {
			return err
		}
		s = s[cut:]
	}
	return f(l.tail)
}

// pieceWriter hands each write to a function.
type pieceWriter func([]byte) error

func (f pieceWriter) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// scrubStream writes a line that arrives in pieces without the secrets
// of sc. It holds back the last Longest bytes of what it has seen, which
// a spelling of a secret could run on from, and writes the rest once no
// spelling may lie in what it holds (redact.Set.MayHold): no spelling
// can then cross into what was written. Once one may, the rest of the
// line is kept and scrubbed whole at the end (a prompt that pastes a
// key).
type scrubStream struct {
	sc    *redact.Set
	out   io.Writer
	held  []byte
	whole bool
}

func (s *scrubStream) write(p []byte) error {
	if s.sc.Empty() {
		_, err := s.out.Write(p)
		return err
	}
	s.held = append(s.held, p...)
	keep := s.sc.Longest()
	if s.whole || len(s.held) < keep+longPart {
		return nil
	}
	if s.sc.MayHold(s.held) {
		s.whole = true
		return nil
	}
	cut := len(s.held) - keep
	// What is held starts where no backslash escapes its first byte, so
	// that a scrub of it reads the escapes as they are.
	for cut > 0 && s.held[cut-1] == '\\' {
		cut--
	}
	if _, err := s.out.Write(s.held[:cut]); err != nil {
		return err
	}
	s.held = append(s.held[:0], s.held[cut:]...)
	return nil
}

// close writes what is held.
func (s *scrubStream) close() error {
	if len(s.held) == 0 {
		return nil
	}
	_, err := s.out.Write(scrubbed(s.sc, s.held))
	s.held = nil
	return err
}

// segmentWriter counts what goes into the current segment.
type segmentWriter struct {
	w   *Writer
	f   io.Writer
	seg *segment
}

func (s *segmentWriter) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.seg.size += int64(n)
	s.w.total += int64(n)
	return n, err
}

// writeLong writes a long line into the current segment, or into a new
// one when it does not fit after the lines the current one holds.
func (w *Writer) writeLong(f io.WriteCloser, sc *redact.Set, l *longLine) (io.WriteCloser, error) {
	if !w.started {
		if err := w.start(); err != nil {
			return nil, err
		}
	}
	cur := &w.segs[len(w.segs)-1]
	if cur.torn || cur.size+int64(l.size) > w.segmentMax() && cur.lines > 0 {
		if f != nil {
			_ = f.Close()
			f = nil
		}
		if err := w.rotate(); err != nil {
			return nil, err
		}
		cur = &w.segs[len(w.segs)-1]
	}
	if f == nil {
		var err error
		if f, err = w.openSegment(cur, l.head); err != nil {
			return nil, err
		}
	}
	cur.lines++
	start := cur.size
	out := &scrubStream{sc: sc, out: &segmentWriter{w: w, f: f, seg: cur}}
	err := l.pieces(out.write)
	if err == nil {
		err = out.close()
	}
	if err != nil {
		cur.torn = cur.size > start
		return f, fmt.Errorf("write %s: %w", SegmentName(cur.n), err)
	}
	return f, nil
}

// lines is how many lines l is: one, or none for no line.
func (l *longLine) lines() int {
	if l == nil {
		return 0
	}
	return 1
}
