package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

func TestRegressionDrainShutdownHangsOnHeldItem(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"sleepMs":100},{"text":"a"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	if _, err := s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queue(engine.QueueAction{ID: "2", Action: engine.QueueBeginEdit}); err != nil {
		t.Fatal(err)
	}
	h.settled(r.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := h.e.Shutdown(ctx, engine.Drain)
	t.Logf("Shutdown(Drain) returned after %v: %v", time.Since(start), err)
	if time.Since(start) > time.Second {
		t.Errorf("drain waits for a held queue item that nothing can release (only the ctx deadline ended it)")
	}
}
