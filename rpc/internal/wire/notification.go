package wire

import (
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
// 400 MB of buffers). Params up to bufferedParams are encoded into a
// buffer and written at once; longer ones are counted first (LSP frames
// start with the length, and an encoding that fails must write nothing)
// and then encoded straight into the output. It reports
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
	b, small, err := jsonenc.AppendUpTo(w.small[:0], params, bufferedParams)
	if err != nil {
		return 0, nil, fmt.Errorf("encoding %s params: %w", method, err)
	}
	if cap(b) <= keptBuffer {
		w.small = b[:0] // the room grown, kept whether or not the params fitted
	}
	if small {
		n, err := w.writeParts(head, b, []byte{'}'})
		return n, err, nil
	}
	size, err := jsonenc.Size(params)
	if err != nil {
		return 0, nil, fmt.Errorf("encoding %s params: %w", method, err)
	}
	n, werr = w.writeStreamed(head, size, params)
	return n, werr, nil
}

// Notification params up to bufferedParams are encoded into a buffer,
// then written (one pass), and the buffer is kept for the next
// notification. Longer ones are counted, then encoded straight into the
// output (two passes, no buffer): a buffer grown to hold a 2.6 MB
// session/state cost three times its size in allocations on every prompt
// (BenchmarkPromptCost, state=true/history=10000), and a buffer kept at
// that size would be idle memory.
// A buffer that grew while params proved too long is kept too (the
// encoder stops a little past bufferedParams), so that a run of long
// notifications does not grow one each time.
const (
	bufferedParams = 256 << 10
	keptBuffer     = 2 * bufferedParams
)
