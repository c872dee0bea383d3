package main

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// gatedValue encodes only once the test lets it, and says when asked.
type gatedValue struct{ asked, release chan struct{} }

func (g gatedValue) MarshalJSON() ([]byte, error) {
	close(g.asked)
	<-g.release
	return []byte(`{"big":true}`), nil
}

// lockedBuffer is a bytes.Buffer safe for the outbox's goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loop run --format stream-json writes every engine event as a line of
// JSON from its subscriber, which runs under the engine's sequence lock of
// the session: the value is queued and the outbox's goroutine encodes it,
// in its place among the other output.
func TestStreamJSONEventsAreEncodedByTheOutbox(t *testing.T) {
	var stdout, stderr lockedBuffer
	o := newOutbox(&stdout, &stderr)
	v := gatedValue{asked: make(chan struct{}), release: make(chan struct{})}
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		o.out("before\n")
		o.outValue(v)
		o.out("after\n")
	}()
	select {
	case <-queued:
	case <-time.After(30 * time.Second):
		t.Fatal("queueing a value waited for its encoding")
	}
	select {
	case <-v.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the outbox never encoded the value")
	}
	close(v.release)
	o.close()
	if got, want := stdout.String(), "before\n{\"big\":true}\nafter\n"; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}
