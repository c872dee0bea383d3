package trace

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock is a clock a test moves by hand.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A segment's header is written when the flusher first writes to it, a
// flush delay after its records were made; it carries the time of the
// record it heads, not the later time of the write, in every segment and
// after lost records too.
func TestASegmentHeaderIsNoLaterThanTheRecordsAfterIt(t *testing.T) {
	clock := &stepClock{now: time.UnixMilli(1_800_000_000_000)}
	fsys := &failingFS{}
	w := newTestWriter(t, Options{Now: clock.Now, MaxBytes: 128 << 10, FS: fsys})
	for i := range 60 {
		// The disk fails for the third burst: the fourth begins with an
		// incomplete record.
		fsys.broken.Store(i >= 20 && i < 30)
		w.Add(&Record{Type: TypePrompt, Input: &Input{Text: strings.Repeat("x", 1500)}})
		clock.Advance(10 * time.Millisecond)
		if i%10 == 9 {
			clock.Advance(flushDelay) // the flusher writes a flush delay later
			w.Flush()
		}
	}
	w.Close()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Segments) < 3 || tr.Truncated {
		t.Fatalf("want several segments, got %v", tr.Segments)
	}
	headers, notes := 0, 0
	for i, r := range tr.Records {
		if r.Type != TypeTrace && r.Type != TypeIncomplete {
			continue
		}
		if r.Type == TypeTrace {
			headers++
		} else {
			notes++
		}
		// The record it heads: the next one of the session's.
		for _, next := range tr.Records[i+1:] {
			if next.Type == TypeTrace || next.Type == TypeIncomplete {
				continue
			}
			if r.T > next.T {
				t.Errorf("%s record (segment %d%s) at %d, %d ms after the record it heads", r.Type, r.Segment, r.Reason, r.T, r.T-next.T)
			}
			break
		}
	}
	if headers != len(tr.Segments) || notes != 1 {
		t.Fatalf("%d headers in %d segments, %d incomplete records", headers, len(tr.Segments), notes)
	}
}
