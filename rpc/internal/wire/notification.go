package wire

import (
	"errors"
	"fmt"

	"github.com/loopdev/loop/internal/jsonenc"
)

// Notification is a notification whose params the stream's writer
// goroutine encodes, just before it writes the message: WriteObject of a
// *Notification only queues it. A sender that must not spend its time
// encoding (one holding a lock, like the engine's event delivery) hands
// over the value instead. Nothing may change Params afterwards. A
// Notification is never merged: send pieces of a stream that should merge
// (MergeText) as ordinary notifications.
type Notification struct {
	Method string
	Params any // nil: no params member
}

func (n *Notification) outgoing() *Outgoing {
	return &Outgoing{Method: n.Method, Notif: true, unencoded: true, value: n.Params}
}

// writeNotification writes a Notification's message, framed, encoding
// its params as it writes them (jsonenc): json.Marshal would build them
// whole in a buffer grown a quarter at a time and return a copy, and the
// envelope was a third (a session/state of a 50 MB history cost some
// 400 MB of buffers). Params up to smallParams are encoded into one
// reused buffer and written at once; longer ones are counted first
// (LSP frames start with the length, and an encoding that fails must
// write nothing) and then encoded straight into the output. It reports
// whether a failure was the output's (w is dead) or only this message's
// encoding.
func (w *frameWriter) writeNotification(method string, params any) (n int, werr, encErr error) {
	m, err := quoteMethod(method)
	if err != nil {
		return 0, nil, err
	}
	head := append(append([]byte(`{"jsonrpc":"2.0","method":`), m...), `,"params":`...)
	if params == nil {
		head = append(head[:len(head)-len(`,"params":`)], '}')
		n, err := w.write(head)
		return n, err, nil
	}
	w.small.b = w.small.b[:0]
	_, err = jsonenc.Write(&w.small, params)
	if err == nil {
		n, err := w.writeParts(head, w.small.b, []byte{'}'})
		return n, err, nil
	}
	if !errors.Is(err, errLongParams) {
		return 0, nil, fmt.Errorf("encoding %s params: %w", method, err)
	}
	size, err := jsonenc.Size(params)
	if err != nil {
		return 0, nil, fmt.Errorf("encoding %s params: %w", method, err)
	}
	n, werr = w.writeStreamed(head, size, params)
	return n, werr, nil
}

// smallParams is the size up to which notification params are encoded
// into a buffer before they are written.
const smallParams = 256 << 10

var errLongParams = errors.New("params longer than smallParams")

// smallBuffer takes up to smallParams bytes, then refuses.
type smallBuffer struct{ b []byte }

func (s *smallBuffer) Write(p []byte) (int, error) {
	if len(s.b)+len(p) > smallParams {
		return 0, errLongParams
	}
	s.b = append(s.b, p...)
	return len(p), nil
}
