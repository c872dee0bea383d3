package trace

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Call records one model call: the call line, then each HTTP attempt
// (request, response, the body's events, its error), then the result. The
// provider's transport drives it from the goroutine that streams the call
// (provider.Observer), so it needs no lock of its own.
type Call struct {
	w        *Writer
	n        int
	purpose  string
	start    time.Time
	attempts int
	pending  []byte // body bytes of the current attempt not yet ending an event
	ends     []int  // where the events found in pending end (reused)
	attempt  int
	// An event line is {"type":"event","t":<t>,"call":..,"raw":..}: the
	// part after t is the same for an attempt's events, and t for the
	// events of a millisecond, so both are made once (eventLine).
	line eventLine
}

// eventLine holds the parts of an event line that repeat.
type eventLine struct {
	attempt int
	head    []byte // `,"call":N,"attempt":A,"raw":`
	t       int64
	digits  []byte // t, in decimal
}

func (l *eventLine) set(call, attempt int, t int64) {
	if l.head == nil || l.attempt != attempt {
		l.attempt = attempt
		l.head = appendEventHead(l.head[:0], call, attempt)
	}
	if l.digits == nil || l.t != t {
		l.t = t
		l.digits = strconv.AppendInt(l.digits[:0], t, 10)
	}
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

// Body records response body bytes as they arrive, one event record per
// server-sent event (its exact bytes, the blank line that ends it
// included). The events that one read delivered arrived together: they
// share the read's time and go into the buffer under one lock.
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
	c.line.set(c.n, attempt, c.millis())
	c.w.addEvents(&c.line, c.pending, c.ends)
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

func (c *Call) endEvents() {
	if len(c.pending) > 0 {
		c.line.set(c.n, c.attempt, c.millis())
		c.w.addEvents(&c.line, c.pending, []int{len(c.pending)})
		c.pending = nil
	}
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
}
