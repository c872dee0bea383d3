package wire

import (
	"bufio"
	"bytes"
	"io"
)

// input is the read side of a stream: a bufio.Reader, and in front of it
// the bytes a misframed LSP body handed back. Handing back never stacks
// readers, so that however many frames are misframed, every read costs the
// same and the memory stays one buffer.
type input struct {
	back []byte // read before br
	br   *bufio.Reader
	// taken counts the bytes handed out, those read again after being
	// handed back included: the work the tests bound (docs/performance.md).
	taken int64
}

func newInput(r io.Reader) *input {
	return &input{br: bufio.NewReaderSize(r, readBufSize)}
}

// readLine returns the next line, its '\n' included, in a new slice. At the
// end of input it returns what is left with the error.
func (in *input) readLine() ([]byte, error) {
	if len(in.back) == 0 {
		line, err := in.br.ReadBytes('\n')
		in.taken += int64(len(line))
		return line, err
	}
	if i := bytes.IndexByte(in.back, '\n'); i >= 0 {
		line := append([]byte(nil), in.back[:i+1]...)
		in.back = in.back[i+1:]
		in.taken += int64(len(line))
		return line, nil
	}
	head := in.back
	in.back = nil
	rest, err := in.br.ReadBytes('\n')
	line := append(append(make([]byte, 0, len(head)+len(rest)), head...), rest...)
	in.taken += int64(len(line))
	return line, err
}

// peek returns the next n bytes without taking them, fewer with the error
// when input ends first. n is small: a header name.
func (in *input) peek(n int) ([]byte, error) {
	if n <= len(in.back) {
		return in.back[:n], nil
	}
	b, err := in.br.Peek(n - len(in.back))
	if len(in.back) == 0 {
		return b, err
	}
	return append(append([]byte(nil), in.back...), b...), err
}

// window returns the bytes that can be had now without taking them: at
// least one (it waits for one) and at most max. They are valid until the
// next call.
func (in *input) window(max int) ([]byte, error) {
	if len(in.back) > 0 {
		return in.back[:min(max, len(in.back))], nil
	}
	if _, err := in.br.Peek(1); err != nil {
		return nil, err
	}
	b, _ := in.br.Peek(min(max, in.br.Buffered()))
	return b, nil
}

// discard takes n bytes that peek or window showed.
func (in *input) discard(n int) {
	in.taken += int64(n)
	if k := min(n, len(in.back)); k > 0 {
		in.back = in.back[k:]
		n -= k
	}
	in.br.Discard(n)
}

// unread hands b back: it is read again before anything else. b is copied.
func (in *input) unread(b []byte) {
	in.back = append(append(make([]byte, 0, len(b)+len(in.back)), b...), in.back...)
}
