package provider

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/loopdev/loop/internal/jsonenc"
)

// Body is a model request's body. A short one is its bytes. A long one
// (it holds the whole history: a 50 MB prompt makes it 50 MB) is the
// value it encodes and its size, counted once, and its bytes are made a
// piece at a time each time they are sent or recorded (jsonenc.Write):
// building it whole kept a copy of the history for as long as the
// request lasted (docs/performance.md, "One large prompt"). Either way
// the bytes are exactly jsonenc.Append's encoding of the value. The value
// is encoded again for every attempt and for the trace, so nothing it
// holds may change once it is made: a request is built from a copy of
// the history (engine/internal/turn), whose messages never change.
type Body struct {
	bytes []byte
	value any // a long body's value; nil for a short one
	size  int
}

// longBody is the size from which a body is kept as its value.
const longBody = 1 << 20

// BodyOf returns b as a Body.
func BodyOf(b []byte) Body { return Body{bytes: b, size: len(b)} }

// EncodeBody returns the body that encodes v: its bytes in a buffer of
// exactly their size, or, when they are long, v and their size.
// jsonenc.Marshal's buffers cost a 50 MB prompt some seven times its size.
func EncodeBody(v any) (Body, error) {
	n, err := jsonenc.Size(v)
	if err != nil {
		return Body{}, err
	}
	if n >= longBody {
		return Body{value: v, size: n}, nil
	}
	b, err := jsonenc.Append(make([]byte, 0, n), v)
	return Body{bytes: b, size: n}, err
}

// Len is the body's length in bytes.
func (b Body) Len() int { return b.size }

// Long reports whether the body is kept as its value, its bytes made
// when written.
func (b Body) Long() bool { return b.value != nil }

// Value is a long body's value (nil for a short one): what the body's
// bytes encode, with jsonenc.
func (b Body) Value() any { return b.value }

// Bytes returns the body's bytes: a short body's own, a long one's
// encoded into a new buffer (a copy of the whole body: only for what
// cannot read it in pieces).
func (b Body) Bytes() []byte {
	if b.value == nil {
		return b.bytes
	}
	out, err := jsonenc.Append(make([]byte, 0, b.size), b.value)
	if err != nil {
		return nil // Size encoded it already: it cannot fail now
	}
	return out
}

// WriteTo writes the body's bytes to w, a long one's in pieces.
func (b Body) WriteTo(w io.Writer) (int64, error) {
	if b.value == nil {
		n, err := w.Write(b.bytes)
		return int64(n), err
	}
	n, err := jsonenc.Write(w, b.value)
	return int64(n), err
}

// reader returns a reader of the body's bytes, for one HTTP attempt. A
// long body is encoded into a pipe by a goroutine started at the first
// read; closing the reader (http.Client always closes a request's body)
// stops it.
func (b Body) reader() io.ReadCloser {
	if b.size == 0 {
		return http.NoBody
	}
	if b.value == nil {
		return io.NopCloser(bytes.NewReader(b.bytes))
	}
	return &bodyPipe{b: b}
}

// bodyPipe reads a long body from a goroutine that encodes it.
type bodyPipe struct {
	b      Body
	once   sync.Once
	r      *io.PipeReader
	mu     sync.Mutex
	closed bool
}

func (p *bodyPipe) Read(q []byte) (int, error) {
	p.once.Do(func() {
		r, w := io.Pipe()
		p.mu.Lock()
		p.r = r
		if p.closed {
			r.Close()
		}
		p.mu.Unlock()
		go func() {
			_, err := p.b.WriteTo(w)
			w.CloseWithError(err) // nil: EOF
		}()
	})
	return p.r.Read(q)
}

func (p *bodyPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.r != nil {
		return p.r.Close()
	}
	return nil
}
