package trace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/redact"
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
// reads span this long (the writer's flush delay: an event reaches the
// disk as soon as it would have as a line of its own) or this much is
// unsearched for an event's end.
const (
	windowSpan  = int64(flushDelay / 1e6) // milliseconds
	windowBytes = 16 << 10
)

// window is what a call's stream read and its records do not hold yet
// (Call.mu). Offsets count from the attempt's first byte.
type window struct {
	attempt int
	t0      int64  // the first read's time
	buf     []byte // buf[off:] are the bytes not recorded
	off     int
	base    int      // the offset of buf[off]
	scanned int      // buf[off:off+scanned] holds no event's end
	reads   []read   // the reads that brought them: where each ended, when
	rec     recorder // only in Writer.spare: the recorder to reuse
	// woken: a flush was asked for since the window's last record was
	// made, so the flusher will come for what the stream reads next.
	woken bool
}

// maxSpare bounds the buffers a writer keeps for its next call.
const maxSpare = 64 << 10

type read struct {
	end int // offset
	t   int64
}

// recorder's buffers are reused from record to record (Call.emitting).
// The record is made in line itself, its events appended after its head:
// one buffer a record, copied once, into the writer's block.
type recorder struct {
	prev []byte
	line []byte
}

// emit records the window's complete events, and when final the rest as
// one event (the attempt is over).
func (c *Call) emit(final bool) {
	c.emitting.Lock()
	c.emitLocked(final)
	c.emitting.Unlock()
}

// tryEmit is the flusher's: a call that is making a record already is
// streaming, not stalled, and is left alone.
func (c *Call) tryEmit() {
	if c.emitting.TryLock() {
		c.emitLocked(false)
		c.emitting.Unlock()
	}
}

// emitLocked makes the events record (c.emitting held). The bytes are read
// without c.mu: the stream only appends past them.
func (c *Call) emitLocked(final bool) {
	c.mu.Lock()
	w := &c.win
	body, base, from := w.buf[w.off:], w.base, w.scanned
	reads, attempt := w.reads, w.attempt
	c.mu.Unlock()
	if len(body) == 0 {
		return
	}
	r := &c.rec
	r.line, r.prev = r.line[:0], r.prev[:0]
	sc := c.w.secrets()
	// An event is part of body: if body holds no secret, none does, and
	// if body is valid UTF-8, so is each event (they are cut after an
	// ASCII newline). One search of the window instead of one an event.
	if !sc.MayHold(body) {
		sc = nil
	}
	valid := utf8.Valid(body)
	n, k, start := 0, 0, 0
	var t0 int64
	after := 0 // bytes of the record's events after its first
	record := func() {
		r.line = append(r.line, "]}\n"...)
		c.w.addLine(r.line, nil)
		r.line, r.prev = r.line[:0], r.prev[:0]
		n, after = 0, 0
	}
	for start < len(body) {
		end := -1
		if i, m := eventEnd(body[from:]); i >= 0 {
			end = from + i + m
		} else if final {
			end = len(body)
		} else {
			break
		}
		// The read that completed the event is when it arrived.
		for k < len(reads)-1 && reads[k].end < base+end {
			k++
		}
		t := reads[k].t
		if after > maxEventsAfterFirst {
			// What a reader accepts (expandEvents): a new record, whose
			// first event is whole.
			record()
		}
		if n == 0 {
			t0 = t
			l := append(r.line, `{"type":"events","t":`...)
			l = strconv.AppendInt(l, t0, 10)
			l = append(l, `,"call":`...)
			l = strconv.AppendInt(l, int64(c.n), 10)
			l = append(l, `,"attempt":`...)
			l = strconv.AppendInt(l, int64(attempt), 10)
			r.line = append(l, `,"events":[`...)
		}
		size := r.addEvent(sc, valid, t-t0, n, body[start:end])
		if n > 0 {
			after += size
		}
		n++
		start, from = end, end
	}
	if n > 0 {
		record()
	}

	c.mu.Lock()
	w.off += start
	w.base += start
	// An event's end ("\r\n\r\n") may straddle what was searched and
	// what comes next.
	w.scanned = max(len(body)-start-3, 0)
	j := 0
	for j < len(w.reads) && w.reads[j].end <= w.base {
		j++
	}
	if j >= len(w.reads)-j {
		// Moved to the front, not resliced: the slice keeps its capacity
		// for the stream's next reads and the next call (Writer.spare).
		// Only when what goes is at least what stays (the reads of one
		// unfinished event), as with buf below.
		w.reads = w.reads[:copy(w.reads, w.reads[j:])]
	} else {
		w.reads = w.reads[j:]
	}
	if w.off == len(w.buf) {
		// All recorded: the buffers start over.
		w.buf, w.off, w.reads = w.buf[:0], 0, w.reads[:0]
	} else if w.off >= len(w.buf)-w.off {
		// An unfinished event stays (a read ended inside it): it moves to
		// the front, or the buffer would grow with the whole attempt. Only
		// when what is recorded is at least what stays, so that each byte
		// moved was paid for by one recorded (a huge event is not copied
		// again and again). No one else reads the buffer: c.emitting.
		n := copy(w.buf, w.buf[w.off:])
		w.buf, w.off = w.buf[:n], 0
	}
	// What the stream reads next needs a flush of its own: the flusher
	// may have come and gone (a stream that stalls now keeps its events
	// off the disk otherwise). What it read while this record was made
	// (the flusher's) did not ask for one, the window being woken still:
	// it is asked for here.
	grew := len(w.buf)-w.off > len(body)-start
	w.woken = grew
	if len(w.reads) > 0 {
		w.t0 = w.reads[0].t
	}
	c.mu.Unlock()
	if grew {
		c.w.wake()
	}
}

// addEvent adds one event to the record being made: its time after the
// record's, and a patch of the event before it (the first: whole).
// sc nil: the event holds no secret; valid: it is valid UTF-8.
func (r *recorder) addEvent(sc *redact.Set, valid bool, dt int64, n int, raw []byte) (size int) {
	ev := raw
	if sc != nil {
		// Each event is scrubbed before it is patched: the reader rebuilds
		// from the events as recorded, so the base must be those.
		ev, _ = sc.Scrub(ev)
		valid = false // the replacement is ASCII, but scrubbing is rare: check again
	}
	if !valid && !utf8.Valid(ev) {
		// A JSON string cannot hold invalid UTF-8: the event is recorded
		// as a reader will read it, each bad byte U+FFFD.
		ev = appendValidUTF8(nil, ev)
	}
	prefix, suffix := commonEnds(r.prev, ev)
	l := r.line
	if n > 0 {
		l = append(l, ',')
	}
	l = append(l, '[')
	l = strconv.AppendInt(l, dt, 10)
	l = append(l, ',')
	l = strconv.AppendInt(l, int64(prefix), 10)
	l = append(l, ',')
	l = strconv.AppendInt(l, int64(suffix), 10)
	l = append(l, ',')
	l = appendJSONString(l, ev[prefix:len(ev)-suffix])
	r.line = append(l, ']')
	r.prev = append(r.prev[:0], ev...)
	return len(ev)
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

// maxEventsAfterFirst bounds the bytes of an events record's events after
// its first, the last one left out: each may keep the whole event before
// it, so without a bound a record of n entries could rebuild to n² bytes
// (a crafted trace, gigabytes from a megabyte). The first event is whole
// in the record and the last keeps at most the one before it, so a
// record rebuilds to at most twice its size and twice this bound. The
// writer starts a new record where the next event would pass it.
const maxEventsAfterFirst = windowBytes

// expandEvents appends the event records an events record holds.
func expandEvents(out []Record, r *Record) ([]Record, error) {
	var prev []byte
	after := 0
	for i, e := range r.Events {
		if i > 1 && after > maxEventsAfterFirst {
			return out, fmt.Errorf("events record of call %d: its events after the first hold more than %d bytes before event %d", r.Call, maxEventsAfterFirst, i+1)
		}
		if e.Prefix < 0 || e.Suffix < 0 || e.Prefix > len(prev) || e.Suffix > len(prev)-e.Prefix {
			return out, fmt.Errorf("event %d of call %d keeps %d and %d bytes of a %d-byte event", i+1, r.Call, e.Prefix, e.Suffix, len(prev))
		}
		raw := slices.Concat(prev[:e.Prefix], []byte(e.Insert), prev[len(prev)-e.Suffix:])
		out = append(out, Record{Type: TypeEvent, T: r.T + e.Dt, Call: r.Call, Attempt: r.Attempt, Raw: string(raw)})
		if i > 0 {
			after += len(raw)
		}
		prev = raw
	}
	return out, nil
}
