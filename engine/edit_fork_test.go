package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
)

// Editing a fork's first user message (a place in the part it shares
// with its parent) after the fork ran a prompt of its own: the fork opens
// again afterwards, in this process after a restart, as any session does.
func TestEditingAForksFirstMessageLeavesAForkThatOpens(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]},{"steps":[{"text":"four"}]}]}`)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	f, err := s.Fork(4, "")
	if err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, f, "f1", "third")
	if _, err := f.Edit(0, engine.PromptInput{RequestID: "e1", Text: "first, edited"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	fid := f.ID()
	h.restart()
	o, err := h.e.Session(fid)
	if err != nil {
		t.Fatalf("the edited fork does not open again: %v", err)
	}
	if got := historyTexts(o.Snapshot().State.Messages); len(got) != 2 || got[0] != "first, edited" {
		t.Fatalf("the edited fork: %q", got)
	}
}
