package wire

import (
	"bufio"
	"io"
	"strconv"
)

// frameWriter frames bodies for the output; one batch is flushed at once.
type frameWriter struct {
	bw      *bufio.Writer
	framing Framing
	hdr     []byte
}

func newFrameWriter(w io.Writer, f Framing) *frameWriter {
	return &frameWriter{bw: bufio.NewWriterSize(w, 64<<10), framing: f}
}

// write frames one body and returns the bytes it takes on the wire.
func (w *frameWriter) write(body []byte) (int, error) {
	if w.framing == LSP {
		w.hdr = append(strconv.AppendInt(append(w.hdr[:0], "Content-Length: "...), int64(len(body)), 10), "\r\n\r\n"...)
		if _, err := w.bw.Write(w.hdr); err != nil {
			return 0, err
		}
		if _, err := w.bw.Write(body); err != nil {
			return 0, err
		}
		return len(w.hdr) + len(body), nil
	}
	if _, err := w.bw.Write(body); err != nil {
		return 0, err
	}
	return len(body) + 1, w.bw.WriteByte('\n')
}

func (w *frameWriter) flush() error { return w.bw.Flush() }
