package trace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/redact"
)

// The flusher takes a window while the stream reads, reads split events
// and keys anywhere (the window's tail included), and the reads' list is
// moved to its front between records: every event still lands once, in
// order, exactly as read but for its keys, and no key reaches the file.
func TestEventsSplitAnywhereWhileTheFlusherTakesTheWindowLandExactAndKeyless(t *testing.T) {
	const key = "sk-window-key-9f8e7d"
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New(key) }})
	c := w.StartCall(Record{Purpose: PurposeMain})
	var stream strings.Builder
	for i := range 3000 {
		if i%7 == 0 {
			fmt.Fprintf(&stream, "data: {\"k\":\"%s\",\"n\":%d}\n\n", key, i)
		} else {
			fmt.Fprintf(&stream, "data: {\"n\":%d,\"t\":\"é\\\"x\"}\n\n", i)
		}
	}
	body := stream.String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 300 {
			w.Flush()
		}
	}()
	rng := rand.New(rand.NewPCG(5, 6))
	for p := 0; p < len(body); {
		n := min(1+rng.IntN(40), len(body)-p)
		c.Body(1, []byte(body[p:p+n]))
		p += n
	}
	<-done
	c.End(1, nil)
	c.Finish(Record{})
	w.Flush()
	if text := segmentText(t, w.Dir()); strings.Contains(text, key) || strings.Contains(text, "9f8e7d") {
		t.Fatal("a key reached the trace")
	}
	if got, want := readStream(t, w.Dir()), strings.ReplaceAll(body, key, Redacted); got != want {
		t.Fatalf("the events read back differ from the stream: %d bytes, want %d", len(got), len(want))
	}
}
