package main

import (
	"io"
	"sync"

	"github.com/loopdev/loop/internal/jsonenc"
)

// outbox writes stdout and stderr in one order on its own goroutine, so an
// engine event is never held up by a slow reader (subscribers must not
// block) and tool lines on stderr stay between the pieces of answer they
// came between. A stream that fails (a closed pipe) is dropped, and the
// run goes on to be saved.
type outbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []outItem
	closed bool
	done   chan struct{}
	w      [2]io.Writer
	failed [2]bool
}

type outItem struct {
	stream int // 0 stdout, 1 stderr
	b      []byte
	v      any // when set, written as a JSON line, encoded by loop
}

func newOutbox(stdout, stderr io.Writer) *outbox {
	o := &outbox{done: make(chan struct{}), w: [2]io.Writer{stdout, stderr}}
	o.cond = sync.NewCond(&o.mu)
	go o.loop()
	return o
}

func (o *outbox) put(stream int, b []byte) {
	if len(b) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if n := len(o.items); n > 0 && o.items[n-1].stream == stream && o.items[n-1].v == nil {
		o.items[n-1].b = append(o.items[n-1].b, b...)
	} else {
		o.items = append(o.items, outItem{stream: stream, b: append([]byte(nil), b...)})
	}
	o.cond.Signal()
}

func (o *outbox) out(s string) { o.put(0, []byte(s)) }
func (o *outbox) err(s string) { o.put(1, []byte(s)) }

// outJSON writes v as one line of JSON, with <, > and & as they are.
func (o *outbox) outJSON(v any) { o.put(0, jsonLine(v)) }

// outValue is outJSON with the encoding left to the outbox's goroutine:
// an engine subscriber holds the event's session sequence lock, under
// which nothing is encoded (docs/lock-order.md). Nothing may change v
// afterwards; engine event payloads never change.
func (o *outbox) outValue(v any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.items = append(o.items, outItem{stream: 0, v: v})
	o.cond.Signal()
}

func (o *outbox) loop() {
	defer close(o.done)
	for {
		o.mu.Lock()
		for len(o.items) == 0 && !o.closed {
			o.cond.Wait()
		}
		if len(o.items) == 0 {
			o.mu.Unlock()
			return
		}
		batch := o.items
		o.items = nil
		o.mu.Unlock()
		for _, it := range batch {
			if o.failed[it.stream] {
				continue
			}
			if it.v != nil {
				it.b = jsonLine(it.v)
			}
			if _, err := o.w[it.stream].Write(it.b); err != nil {
				o.failed[it.stream] = true
			}
		}
	}
}

// close writes what is queued and stops.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Signal()
	o.mu.Unlock()
	<-o.done
}

// jsonLine encodes v compactly, ending in a newline, without escaping
// HTML characters: Loop's JSON shows <, > and & as they are.
func jsonLine(v any) []byte {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		b, _ = jsonenc.Marshal(map[string]string{"error": err.Error()})
	}
	return append(b, '\n')
}
