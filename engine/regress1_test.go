package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// SetModel sets op idle by hand, publishes, then its deferred release sets
// op idle again: a prompt accepted in between loses its operation.
func TestRegressionSetModelClobbersOp(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"hang":true}]},{"steps":[{"hang":true}]}]}`)
	s := h.newSession()
	fired := false
	var promptErr error
	var res engine.PromptResult
	h.e.Subscribe(func(ev engine.Event) {
		st, ok := ev.Payload.(*engine.StateEvent)
		if !ok || fired || st.SessionID != s.ID() {
			return
		}
		fired = true
		// SetModel's publishState: op is already idle, release not yet run.
		done := make(chan struct{})
		go func() { res, promptErr = s.Prompt(engine.PromptInput{RequestID: "p1", Text: "one"}); close(done) }()
		for s.Snapshot().Operation != engine.OpPrompt {
			time.Sleep(time.Millisecond)
		}
		_ = done
	})
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if promptErr != nil {
		t.Fatal(promptErr)
	}
	snap := s.Snapshot()
	t.Logf("after SetModel: operation=%q runId=%q (run %s is hanging)", snap.Operation, snap.RunID, res.RunID)
	// A second prompt is not queued: a second model loop starts concurrently.
	r2, err := s.Prompt(engine.PromptInput{RequestID: "p2", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second prompt queued=%v", r2.Queued)
	if !r2.Queued {
		t.Errorf("second prompt started a concurrent run while run %s is active", res.RunID)
	}
	_, _ = s.Abort(context.Background())
}
