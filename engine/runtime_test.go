package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
)

func TestRuntimeReplacesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"hang":true}]}]}`)
	first := h.newSession()
	if _, err := first.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, ptr("high")); err != nil {
		t.Fatal(err)
	}
	res, _ := first.Prompt(engine.PromptInput{RequestID: "a", Text: "a"})
	h.settled(res.RunID)

	rt := h.e.NewRuntime(first)
	var rebound []string
	rt.SetRebindSession(func(s *engine.Session) error { rebound = append(rebound, s.ID()); return nil })

	// newSession keeps model, effort and cwd, with empty history.
	if _, err := rt.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := rt.Session()
	snap := second.Snapshot()
	if second.ID() == first.ID() || snap.Effort != "high" || snap.State.MessageCount != 0 || second.Cwd() != first.Cwd() {
		t.Fatalf("new session: %+v", snap)
	}
	// A failed switch keeps the current session.
	if _, err := rt.SwitchSession(context.Background(), "01a22800-0000-7000-8000-000000000000"); engine.CodeOf(err) != engine.CodeSessionNotFound {
		t.Fatalf("want session_not_found, got %v", err)
	}
	if rt.Session() != second {
		t.Fatal("a failed switch must keep the previous session")
	}
	// Busy sessions cannot be left.
	res, _ = second.Prompt(engine.PromptInput{RequestID: "b", Text: "b"})
	if _, err := rt.SwitchSession(context.Background(), first.ID()); engine.CodeOf(err) != engine.CodeBusy {
		t.Fatalf("want busy, got %v", err)
	}
	second.Abort(context.Background())
	h.settled(res.RunID)
	if _, err := rt.SwitchSession(context.Background(), first.ID()); err != nil {
		t.Fatal(err)
	}
	if rt.Session().ID() != first.ID() || len(rebound) != 2 || rebound[1] != first.ID() {
		t.Fatalf("rebinds: %v", rebound)
	}
	if err := rt.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Runtime.NewSession from an independent chat keeps its private working
// directory.
func TestRuntimeNewSessionKeepsTheIndependentCwd(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	first, err := h.e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	rt := h.e.NewRuntime(first)
	if _, err := rt.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rt.Session().Cwd(); got != first.Cwd() {
		t.Errorf("newSession did not keep cwd: %s -> %s", first.Cwd(), got)
	}
}
