package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Delete during a compaction with a queued input: stop() aborts (pausing
// nothing), the compaction lets go, the queue drains, and a fresh run
// starts on the session being deleted.
func TestRegressionDeleteDuringCompactStartsRun(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"text":"a1"}]},
		{"match":"two","steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"hang":true}]},
		{"match":"three","steps":[{"sleepMs":300},{"toolCall":{"name":"ls","arguments":{}}}]},
		{"match":"three","steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	r, _ = s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	h.settled(r.RunID)
	go func() { _, _ = s.Compact(context.Background()) }()
	for s.Snapshot().Operation != engine.OpCompact {
		time.Sleep(time.Millisecond)
	}
	q, _ := s.Prompt(engine.PromptInput{RequestID: "3", Text: "three"})
	if _, err := h.e.Delete(context.Background(), h.ws, s.ID()); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	t.Logf("after Delete returned: operation=%q runId=%q", snap.Operation, snap.RunID)
	_ = q
	if snap.Operation == engine.OpPrompt {
		t.Errorf("a run started on a session being deleted")
	}
}
