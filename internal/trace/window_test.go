package trace

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/redact"
)

// A stream whose window kept an unfinished event when the flusher last
// took it, and which then completes events and stalls, still has a flush
// scheduled: its events reach the disk within the flush delay, not when
// the stream ends (docs/traces.md, "Events").
func TestAStreamThatStallsAfterAnUnfinishedEventStillSchedulesAFlush(t *testing.T) {
	now := time.UnixMilli(1_764_590_000_000)
	w := newTestWriter(t, Options{Now: func() time.Time { return now }})
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Body(1, []byte("data: {\"a\":1}\n\ndata: {\"b\""))
	w.Flush() // what the flusher does a second later: "a" lands, "b" waits
	c.Body(1, []byte(":2}\n\n"))
	w.mu.Lock()
	scheduled := w.flushing
	w.mu.Unlock()
	if !scheduled {
		t.Fatal("an event completed after the flusher's last visit has no flush scheduled: a stall keeps it off the disk")
	}
}

// Reads that cut events in two (a reader's buffer does not care where an
// event ends) leave an unfinished event in the window at every record;
// the window still holds only what is not recorded, not the whole
// attempt's body.
func TestAWindowHoldsOnlyWhatIsNotRecordedWhenReadsSplitEvents(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	var stream strings.Builder
	for i := range 40_000 {
		fmt.Fprintf(&stream, "data: {\"choices\":[{\"delta\":{\"content\":\"token %d\"}}]}\n\n", i)
	}
	s := stream.String() // some 2.4 MB
	for i := 0; i < len(s); i += 4000 {
		c.Body(1, []byte(s[i:min(i+4000, len(s))]))
	}
	c.mu.Lock()
	held := cap(c.win.buf)
	c.mu.Unlock()
	if held > 256<<10 {
		t.Errorf("the window holds %d bytes of a %d-byte stream", held, len(s))
	}
	c.End(1, nil)
	c.Finish(Record{})
	w.Flush()
	if readStream(t, w.Dir()) != s {
		t.Fatal("the events read back are not the stream's bytes")
	}
}

// Bytes the stream reads while the flusher is making the window's record
// (here: when it looks up the keys to scrub with) are after what it took:
// a flush still follows for them, though the flusher found nothing else to
// write and ended.
func TestBytesReadWhileTheFlusherTakesTheWindowStillGetAFlush(t *testing.T) {
	now := time.UnixMilli(1_764_590_000_000)
	var mu sync.Mutex
	var inject func()
	w := newTestWriter(t, Options{Now: func() time.Time { return now }, Secrets: func() *redact.Set {
		mu.Lock()
		f := inject
		inject = nil
		mu.Unlock()
		if f != nil {
			f()
		}
		return nil
	}})
	c := w.StartCall(Record{Purpose: PurposeMain})
	w.Flush() // the call record, out of the way
	c.Body(1, []byte("data: {\"a\""))
	mu.Lock()
	inject = func() { c.Body(1, []byte(":1}\n\n")) }
	mu.Unlock()
	// The flush the read scheduled, run here as its timer would run it.
	w.mu.Lock()
	if !w.flushing || w.timer == nil || !w.timer.Stop() {
		w.mu.Unlock()
		t.Fatal("the read scheduled no flush")
	}
	w.mu.Unlock()
	w.flush()
	w.mu.Lock()
	scheduled := w.flushing
	w.mu.Unlock()
	if !scheduled {
		t.Fatal("an event completed while the flusher took the window has no flush scheduled")
	}
}

// A call after the first reuses the buffers of the one before
// (Writer.spare): its reads allocate nothing, the list of their ends and
// times included, which a record made at the attempt's end used to leave
// with no capacity.
func TestACallReusesTheBuffersOfTheCallBefore(t *testing.T) {
	w := newTestWriter(t, Options{})
	var events [][]byte
	for i := range 100 {
		events = append(events, fmt.Appendf(nil, "data: {\"choices\":[{\"delta\":{\"content\":\"word%d \"}}]}\n\n", i))
	}
	call := func() float64 {
		c := w.StartCall(Record{Purpose: PurposeMain})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, ev := range events {
			c.Body(1, ev)
		}
		runtime.ReadMemStats(&after)
		c.End(1, nil)
		c.Finish(Record{})
		return float64(after.Mallocs - before.Mallocs)
	}
	call()
	call()
	if n := call(); n > 0 {
		t.Fatalf("the reads of a call after the first made %v allocations", n)
	}
}
