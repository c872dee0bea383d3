package trace

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
	"time"
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
	pending  []byte // body bytes of the current attempt not yet ending an event
	ends     []int  // where the events found in pending end (reused)
	attempt  int

	mu  sync.Mutex
	win window // the events not yet in the writer's buffer (events.go)
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
	w.mu.Unlock()
	return c
}

// Number is the call's number in its trace.
func (c *Call) Number() int { return c.n }

// Purpose is the call's purpose (PurposeMain, ...).
func (c *Call) Purpose() string { return c.purpose }

// Request records an attempt's request: the exact body, the URL and the
// headers without credentials.
func (c *Call) Request(attempt int, url string, h http.Header, body []byte) {
	c.endEvents()
	c.attempt, c.attempts = attempt, max(c.attempts, attempt)
	c.w.addRequest(c.purpose, &Record{Type: TypeRequest, Call: c.n, Attempt: attempt, Method: http.MethodPost, URL: URL(url), Headers: Headers(h)}, body)
}

// Response records the status of an attempt's response.
func (c *Call) Response(attempt, status int) {
	c.w.Add(&Record{Type: TypeResponse, Call: c.n, Attempt: attempt, Status: status})
}

// Body records response body bytes as they arrive, split into server-sent
// events (each with its exact bytes, the blank line that ends it
// included), which gather in the call's window (events.go). The events
// that one read delivered arrived together: they share the read's time.
func (c *Call) Body(attempt int, p []byte) {
	// The search resumes where the last one ended (less the 4 bytes an
	// event end may straddle), so a long event is not scanned again and
	// again as it arrives.
	from := max(len(c.pending)-4, 0)
	c.pending = append(c.pending, p...)
	c.ends = c.ends[:0]
	for {
		i, n := eventEnd(c.pending[from:])
		if i < 0 {
			break
		}
		from += i + n
		c.ends = append(c.ends, from)
	}
	if len(c.ends) == 0 {
		return
	}
	c.addEvents(attempt, c.millis(), c.pending, c.ends)
	// The unfinished event moves to the front; the buffer is reused.
	c.pending = append(c.pending[:0], c.pending[c.ends[len(c.ends)-1]:]...)
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
// line is recorded as it is, and the window goes to the writer.
func (c *Call) endEvents() {
	if len(c.pending) > 0 {
		c.addEvents(c.attempt, c.millis(), c.pending, []int{len(c.pending)})
		c.pending = c.pending[:0]
	}
	c.drain()
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
	c.w.mu.Lock()
	delete(c.w.calls, c)
	c.w.mu.Unlock()
}
