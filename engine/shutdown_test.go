package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Shutdown(Drain) lets queued inputs run, but an item held for editing
// never starts by itself: drain does not wait for it.
func TestShutdownDrainDoesNotWaitForAHeldItem(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"waitFile":"go"},{"text":"a"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	if q, err := s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"}); err != nil || !q.Queued {
		t.Fatalf("%+v %v", q, err)
	}
	if _, err := s.Queue(engine.QueueAction{ID: "2", Action: engine.QueueBeginEdit}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.settled(r.RunID)
	// Nothing can release the held item: a drain that waited for it would
	// end only with this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.e.Shutdown(ctx, engine.Drain); err != nil || ctx.Err() != nil {
		t.Fatalf("Shutdown(Drain) with a held item: %v (deadline: %v)", err, ctx.Err())
	}
	if q := s.Snapshot().State.Queue; len(q) != 1 || !q[0].Held {
		t.Errorf("queue after shutdown: %+v", q)
	}
}
