package wire

import (
	"bufio"
	"io"
	"strconv"

	"github.com/loopdev/loop/internal/jsonenc"
)

// frameWriter frames bodies for the output; one batch is flushed at once.
type frameWriter struct {
	bw      *bufio.Writer
	framing Framing
	hdr     []byte
	small   []byte // notification params (writeNotification)
}

func newFrameWriter(w io.Writer, f Framing) *frameWriter {
	return &frameWriter{bw: bufio.NewWriterSize(w, 64<<10), framing: f}
}

// writeParts frames one body made of parts, written as they are.
func (w *frameWriter) writeParts(parts ...[]byte) (int, error) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	n := 0
	if w.framing == LSP {
		w.hdr = append(strconv.AppendInt(append(w.hdr[:0], "Content-Length: "...), int64(size), 10), "\r\n\r\n"...)
		if _, err := w.bw.Write(w.hdr); err != nil {
			return 0, err
		}
		n = len(w.hdr)
	}
	for _, p := range parts {
		if _, err := w.bw.Write(p); err != nil {
			return 0, err
		}
	}
	if w.framing == LSP {
		return n + size, nil
	}
	return size + 1, w.bw.WriteByte('\n')
}

// writeStreamed frames the body head, params as jsonenc encodes them
// (size bytes), "}", encoding params straight into the output.
func (w *frameWriter) writeStreamed(head []byte, size int, params any) (int, error) {
	body := len(head) + size + 1
	n := 0
	if w.framing == LSP {
		w.hdr = append(strconv.AppendInt(append(w.hdr[:0], "Content-Length: "...), int64(body), 10), "\r\n\r\n"...)
		if _, err := w.bw.Write(w.hdr); err != nil {
			return 0, err
		}
		n = len(w.hdr)
	}
	if _, err := w.bw.Write(head); err != nil {
		return 0, err
	}
	if _, err := jsonenc.Write(w.bw, params); err != nil {
		return 0, err // Size encoded it: only the output fails
	}
	if err := w.bw.WriteByte('}'); err != nil {
		return 0, err
	}
	if w.framing == LSP {
		return n + body, nil
	}
	return body + 1, w.bw.WriteByte('\n')
}

// write frames one body and returns the bytes it takes on the wire.
func (w *frameWriter) write(body []byte) (int, error) { return w.writeParts(body) }

func (w *frameWriter) flush() error { return w.bw.Flush() }
