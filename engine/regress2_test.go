package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Abort while a compaction holds the session: the queue is not paused, so
// the input queued during the compaction starts a new run after the abort.
func TestRegressionAbortDuringCompactDoesNotPause(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"text":"a1"}]},
		{"match":"two","steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"hang":true}]},
		{"match":"three","steps":[{"sleepMs":300},{"text":"a3"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	r, _ = s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	h.settled(r.RunID)
	cerr := make(chan error, 1)
	go func() { _, err := s.Compact(context.Background()); cerr <- err }()
	for s.Snapshot().Operation != engine.OpCompact {
		time.Sleep(time.Millisecond)
	}
	q, err := s.Prompt(engine.PromptInput{RequestID: "3", Text: "three"})
	if err != nil || !q.Queued {
		t.Fatalf("%+v %v", q, err)
	}
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: %v", <-cerr)
	t.Logf("abort returned: operation=%q runId=%q queue=%d", snap.Operation, snap.RunID, len(snap.State.Queue))
	if snap.Operation == engine.OpPrompt || len(snap.State.Queue) == 0 {
		t.Errorf("abort did not pause draining; queued input %s was dispatched", q.RunID)
	}
}
