package trace

import (
	"bytes"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/loopdev/loop/internal/provider"
)

// Call records one model call: the call line, then each HTTP attempt
// (request, response, the body's events, its error), then the result. The
// provider's transport drives it from the goroutine that streams the call
// (provider.Observer); only its window of events is shared, with the
// flusher, under mu.
type Call struct {
	w        *Writer
	n        int
	purpose  string
	start    time.Time
	attempts int
	attempt  int

	// The stream's reads not yet recorded (events.go): the stream's
	// goroutine appends to it, whoever makes a record takes it.
	mu  sync.Mutex
	win window
	// emitting serializes the making of records, so that they land in
	// order; the flusher only tries it.
	emitting sync.Mutex
	rec      recorder
}

// millis is an event's time: the injected clock's, or the call's start
// plus what the monotonic clock says has passed since (one clock read).
func (c *Call) millis() int64 {
	if c.w.o.Now != nil {
		return c.w.o.Now().UnixMilli()
	}
	return (c.start.UnixNano() + int64(time.Since(c.start))) / int64(time.Millisecond)
}

// StartCall numbers a call, writes its call record (r's purpose, run,
// provider, model...) and returns its recorder.
func (w *Writer) StartCall(r Record) *Call {
	c := &Call{w: w, n: w.NextCall(), purpose: r.Purpose, start: w.now()}
	r.Type, r.Call = TypeCall, c.n
	w.Add(&r)
	w.mu.Lock()
	if w.calls == nil {
		w.calls = map[*Call]struct{}{}
	}
	w.calls[c] = struct{}{}
	// The buffers of the call before, grown to a stream's size already.
	if w.spare != nil {
		c.win.buf, c.win.reads, c.rec = w.spare.buf[:0], w.spare.reads[:0], w.spare.rec
		w.spare = nil
	}
	w.mu.Unlock()
	return c
}

// Number is the call's number in its trace.
func (c *Call) Number() int { return c.n }

// Purpose is the call's purpose (PurposeMain, ...).
func (c *Call) Purpose() string { return c.purpose }

// Request records an attempt's request: the exact body, the URL and the
// headers without credentials. body must not change afterwards: a long
// one waits for the disk as it is (longline.go), a long one kept as its
// value is read in pieces (bodystream.go).
func (c *Call) Request(attempt int, url string, h http.Header, body provider.Body) {
	c.endEvents()
	c.attempt, c.attempts = attempt, max(c.attempts, attempt)
	u, hs := c.w.requestHead(url, h)
	c.w.addRequest(c.purpose, &Record{Type: TypeRequest, Call: c.n, Attempt: attempt, Method: http.MethodPost, URL: u, Headers: hs}, body)
}

// Response records the status of an attempt's response.
func (c *Call) Response(attempt, status int) {
	c.w.Add(&Record{Type: TypeResponse, Call: c.n, Attempt: attempt, Status: status})
}

// Body records response body bytes as they arrive. They are kept as read,
// with the read's time, and split into server-sent events (each with its
// exact bytes, the blank line that ends it included) when their record is
// made (events.go): a stream reads once a token, and this is all a read
// costs.
func (c *Call) Body(attempt int, p []byte) {
	t := c.millis()
	c.mu.Lock()
	w := &c.win
	held := len(w.buf) - w.off
	if held == 0 {
		w.t0 = t
	}
	wake := !w.woken
	w.woken = true
	w.attempt = attempt
	w.buf = append(w.buf, p...)
	held += len(p)
	w.reads = append(w.reads, read{end: w.base + held, t: t})
	full := t-w.t0 >= windowSpan || held-w.scanned >= windowBytes
	c.mu.Unlock()
	if full {
		c.emit(false)
	} else if wake {
		// The flusher makes the record if the stream stalls before the
		// window fills (a hung stream's last events are what a trace is
		// for); once per record made, not once a read.
		c.w.wake()
	}
}

// eventEnd finds the first blank line, "\n\n" or "\r\n\r\n": the index
// where it starts and its length, or -1. It looks at each newline once,
// so a stream's events are found in linear time.
func eventEnd(b []byte) (int, int) {
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\n')
		if k < 0 {
			return -1, 0
		}
		k += i
		switch {
		case k+1 < len(b) && b[k+1] == '\n':
			return k, 2
		case k > 0 && b[k-1] == '\r' && k+2 < len(b) && b[k+1] == '\r' && b[k+2] == '\n':
			return k - 1, 4
		}
		i = k + 1
	}
}

// endEvents ends the attempt's events: a last one cut short of its blank
// line is recorded as it is.
func (c *Call) endEvents() {
	c.emit(true)
}

// End records the end of an attempt; err is nil when its stream was
// complete.
func (c *Call) End(attempt int, err error) {
	c.endEvents()
	if err != nil {
		r := &Record{Type: TypeError, Call: c.n, Attempt: attempt, Error: err.Error()}
		var re interface{ IsRetryable() bool }
		if errors.As(err, &re) {
			r.Retryable = re.IsRetryable()
		}
		c.w.Add(r)
	}
}

// Finish writes the call's result record (r's stop reason, usage, error,
// content); duration and attempts are filled in.
func (c *Call) Finish(r Record) {
	c.endEvents()
	r.Type, r.Call = TypeResult, c.n
	r.DurationMs = time.Since(c.start).Milliseconds()
	r.Attempts = c.attempts
	c.w.Add(&r)
	// The call's buffers, grown to a stream's size, go to the next call.
	var spare *window
	c.emitting.Lock()
	c.mu.Lock()
	if len(c.win.buf) == c.win.off && cap(c.win.buf) <= maxSpare {
		spare = &window{buf: c.win.buf, reads: c.win.reads, rec: c.rec}
		c.win, c.rec = window{}, recorder{}
	}
	c.mu.Unlock()
	c.emitting.Unlock()
	c.w.mu.Lock()
	delete(c.w.calls, c)
	if spare != nil {
		c.w.spare = spare
	}
	c.w.mu.Unlock()
}

// requestHead is URL(url) and Headers(h), remembered from the last request:
// a session's requests go to one URL with the same headers, and making
// them anew cost a parse, a map and a sort each.
func (w *Writer) requestHead(url string, h http.Header) (string, map[string]string) {
	w.mu.Lock()
	last := w.lastHead
	w.mu.Unlock()
	if last != nil && last.url == url && maps.EqualFunc(last.h, h, slices.Equal[[]string]) {
		return last.cleanURL, last.headers
	}
	next := &requestHead{url: url, h: h.Clone(), cleanURL: URL(url), headers: Headers(h)}
	w.mu.Lock()
	w.lastHead = next
	w.mu.Unlock()
	return next.cleanURL, next.headers
}

// requestHead is a request's URL and headers, as sent and as recorded. The
// recorded map is shared by the records that use it, and never changed.
type requestHead struct {
	url      string
	h        http.Header
	cleanURL string
	headers  map[string]string
}
