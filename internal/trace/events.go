package trace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A stream makes an event a token, and a line for each (its exact bytes,
// escaped, with its call, attempt and time) made the trace some 150 bytes
// an event: written to a file of the data root, whose session commits
// fsync, that cost more CPU than everything else the trace does
// (docs/performance.md, "Traces"). Events instead gather in a window of
// their call and go to the buffer as one events record (docs/traces.md,
// "Events"): each event there is its time after the record's and a patch
// of the event before it, which it mostly repeats (only the token
// differs), so an event takes some 15 bytes. The first event of a record
// is whole, so that a record reads on its own.

// windowSpan and windowBytes bound a window: its record is made once its
// events span this long (the writer's flush delay: an event reaches the
// disk as soon as it would have as a line of its own) or hold this much.
const (
	windowSpan  = int64(flushDelay / 1e6) // milliseconds
	windowBytes = 16 << 10
)

// window is a call's events not yet in the writer's buffer (Call.mu).
type window struct {
	attempt int
	t0      int64  // the first event's time
	n       int    // events in it
	entries []byte // `[dt,prefix,suffix,"insert"]` of each, joined by ','
	prev    []byte // the last event as recorded: the next one's base
	line    []byte // reused to make the record
}

// addEvents adds events[:ends[0]], events[ends[0]:ends[1]], ... of one
// read (at time t) to the window.
func (c *Call) addEvents(attempt int, t int64, events []byte, ends []int) {
	sc := c.w.scrubberOf()
	c.mu.Lock()
	opened := c.win.n == 0
	start := 0
	for _, end := range ends {
		c.addEventLocked(sc, attempt, t, events[start:end])
		start = end
	}
	full := c.win.n > 0 && (t-c.win.t0 >= windowSpan || len(c.win.entries) >= windowBytes)
	if full {
		c.emitLocked()
	}
	c.mu.Unlock()
	if opened && !full {
		// The flusher takes the window if the stream stalls before it
		// fills (a hung stream's last events are what a trace is for).
		c.w.wake()
	}
}

func (c *Call) addEventLocked(sc *scrubber, attempt int, t int64, raw []byte) {
	w := &c.win
	if w.n > 0 && w.attempt != attempt {
		c.emitLocked()
	}
	if w.n == 0 {
		w.attempt, w.t0, w.prev = attempt, t, w.prev[:0]
	}
	ev := raw
	if sc != nil {
		// Each event is scrubbed before it is patched: the reader rebuilds
		// from the events as recorded, so the writer's base must be those.
		ev, _ = sc.scrub(ev)
	}
	if !utf8.Valid(ev) {
		// A JSON string cannot hold invalid UTF-8: the event is recorded
		// as a reader will read it, each bad byte U+FFFD.
		ev = appendValidUTF8(nil, ev)
	}
	prefix, suffix := commonEnds(w.prev, ev)
	if w.n > 0 {
		w.entries = append(w.entries, ',')
	}
	w.entries = append(w.entries, '[')
	w.entries = strconv.AppendInt(w.entries, t-w.t0, 10)
	w.entries = append(w.entries, ',')
	w.entries = strconv.AppendInt(w.entries, int64(prefix), 10)
	w.entries = append(w.entries, ',')
	w.entries = strconv.AppendInt(w.entries, int64(suffix), 10)
	w.entries = append(w.entries, ',')
	w.entries = appendJSONString(w.entries, ev[prefix:len(ev)-suffix])
	w.entries = append(w.entries, ']')
	w.prev = append(w.prev[:0], ev...)
	w.n++
}

// emitLocked hands the window's record to the writer and empties it
// (c.mu held; the writer's lock is taken after it, never before).
func (c *Call) emitLocked() {
	w := &c.win
	if w.n == 0 {
		return
	}
	l := append(w.line[:0], `{"type":"events","t":`...)
	l = strconv.AppendInt(l, w.t0, 10)
	l = append(l, `,"call":`...)
	l = strconv.AppendInt(l, int64(c.n), 10)
	l = append(l, `,"attempt":`...)
	l = strconv.AppendInt(l, int64(w.attempt), 10)
	l = append(l, `,"events":[`...)
	l = append(l, w.entries...)
	l = append(l, "]}\n"...)
	c.w.addLine(l, nil)
	w.line, w.entries, w.n = l, w.entries[:0], 0
}

// drain hands the window to the writer, whatever it holds.
func (c *Call) drain() {
	c.mu.Lock()
	c.emitLocked()
	c.mu.Unlock()
}

// appendValidUTF8 appends b with each byte that is not part of valid
// UTF-8 replaced by U+FFFD, as appendJSONString writes it.
func appendValidUTF8(out, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// EventPatch is one event of an events record: its time after the
// record's, and its bytes as a change of the event before it in the
// record (the first: of none), as [dt, prefix, suffix, insert].
type EventPatch struct {
	Dt     int64
	Prefix int
	Suffix int
	Insert string
}

// MarshalJSON writes the patch as the array the trace holds.
func (e EventPatch) MarshalJSON() ([]byte, error) {
	out := fmt.Appendf(nil, "[%d,%d,%d,", e.Dt, e.Prefix, e.Suffix)
	return append(appendJSONString(out, []byte(e.Insert)), ']'), nil
}

// UnmarshalJSON reads [dt, prefix, suffix, insert].
func (e *EventPatch) UnmarshalJSON(b []byte) error {
	var a []json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 4 {
		return fmt.Errorf("an event patch has %d members, not 4", len(a))
	}
	for i, dst := range []any{&e.Dt, &e.Prefix, &e.Suffix, &e.Insert} {
		if err := json.Unmarshal(a[i], dst); err != nil {
			return fmt.Errorf("event patch member %d: %w", i+1, err)
		}
	}
	return nil
}

// expandEvents appends the event records an events record holds.
func expandEvents(out []Record, r *Record) ([]Record, error) {
	var prev []byte
	for i, e := range r.Events {
		if e.Prefix < 0 || e.Suffix < 0 || e.Prefix > len(prev) || e.Suffix > len(prev)-e.Prefix {
			return out, fmt.Errorf("event %d of call %d keeps %d and %d bytes of a %d-byte event", i+1, r.Call, e.Prefix, e.Suffix, len(prev))
		}
		raw := slices.Concat(prev[:e.Prefix], []byte(e.Insert), prev[len(prev)-e.Suffix:])
		out = append(out, Record{Type: TypeEvent, T: r.T + e.Dt, Call: r.Call, Attempt: r.Attempt, Raw: string(raw)})
		prev = raw
	}
	return out, nil
}
