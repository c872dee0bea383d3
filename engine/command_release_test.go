package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
)

// A command lets go of the session once: a prompt accepted while
// set_model publishes its state keeps the operation its run holds, and a
// second prompt queues behind that run instead of starting beside it.
// (SetModel used to set the operation idle by hand, publish, then set it
// idle again in a deferred release.)
func TestPromptAcceptedWhileSetModelPublishesKeepsItsRun(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"hang":true}]},{"steps":[{"hang":true}]}]}`)
	s := h.newSession()
	type result struct {
		res engine.PromptResult
		err error
	}
	started := make(chan result, 1)
	fired := false
	h.e.Subscribe(func(ev engine.Event) {
		st, ok := ev.Payload.(*engine.StateEvent)
		if !ok || fired || st.SessionID != s.ID() {
			return
		}
		fired = true
		// A prompt racing SetModel's state event.
		go func() {
			res, err := s.Prompt(engine.PromptInput{RequestID: "p1", Text: "one"})
			started <- result{res, err}
		}()
	})
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil); err != nil {
		t.Fatal(err)
	}
	first := <-started
	if first.err != nil {
		t.Fatal(first.err)
	}
	waitFor(t, func() bool { return s.Snapshot().Operation == engine.OpPrompt })
	// SetModel has returned: any release of its own has happened.
	if op := s.Snapshot().Operation; op != engine.OpPrompt {
		t.Fatalf("operation %q while run %s hangs", op, first.res.RunID)
	}
	r2, err := s.Prompt(engine.PromptInput{RequestID: "p2", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Queued {
		t.Errorf("second prompt started a concurrent run while run %s is active", first.res.RunID)
	}
	_, _ = s.Abort(context.Background())
}
