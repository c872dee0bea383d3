package engine_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// A command admitted while a run settles (here set_title, sent the moment
// agent_settled arrives) must not start the next queued input when it
// lets go: the queue waits for the settling run's own drain, so that run
// publishes all it settles with before the next run_accepted (docs/
// protocol.md 8.1). The command used to drain the queue itself.
func TestCommandDuringSettlingLeavesTheQueueToTheSettlingRun(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"one","steps":[{"waitFile":"go"},{"text":"a1"}]},{"match":"two","steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	first, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	if err != nil || !second.Queued {
		t.Fatalf("second prompt: %+v %v", second, err)
	}
	operation := make(chan string, 1)
	titled := make(chan error, 1)
	h.e.Subscribe(func(ev engine.Event) {
		p, ok := ev.Payload.(*engine.AgentSettledEvent)
		if !ok || p.RunID != first.RunID {
			return
		}
		// The run has let go and is publishing how it ended: a command is
		// admitted. It lets go before it publishes, so wait for that here
		// (its own events wait for this callback).
		go func() { _, err := s.SetTitle("named while settling"); titled <- err }()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if snap := s.Snapshot(); snap.State.Title == "named while settling" && snap.Operation != engine.OpTitle {
				operation <- snap.Operation
				return
			}
		}
		operation <- "title (it never let go)"
	})
	if err := os.WriteFile(filepath.Join(h.root, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := <-operation; got != engine.OpIdle {
		t.Errorf("after the command let go, operation %q: the queue started the next input while the first run was still settling", got)
	}
	if err := <-titled; err != nil {
		t.Fatalf("set_title while the run settles: %v", err)
	}
	if got := h.settled(second.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("queued run: %s %+v", got.Outcome, got.Error)
	}
	var order []string
	h.mu.Lock()
	for _, ev := range h.events {
		switch p := ev.Payload.(type) {
		case *engine.RunAcceptedEvent:
			order = append(order, "accepted "+p.RequestID)
		case *engine.AgentSettledEvent:
			order = append(order, "settled "+p.RequestID)
		}
	}
	h.mu.Unlock()
	want := []string{"accepted 1", "settled 1", "accepted 2", "settled 2"}
	if len(order) != len(want) {
		t.Fatalf("run events %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("run events %v, want %v", order, want)
		}
	}
}
