package engine_test

import (
	"testing"

	"github.com/loopdev/loop/engine"
)

// TestCreateSessionIsWrittenAtOnceAndUnlisted: CreateSession's session is
// on disk before its first prompt, with the metadata set on it, and opens
// from the next process; lists leave it out until it holds a user message.
func TestCreateSessionIsWrittenAtOnceAndUnlisted(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"hello"}]}]}`)
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Snapshot().Draft {
		t.Fatal("a created session is not a draft")
	}
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, ptr("high")); err != nil {
		t.Fatal(err)
	}
	if list, err := h.e.List(h.ws, false); err != nil || len(list) != 0 {
		t.Fatalf("an empty session is listed: %+v %v", list, err)
	}
	id := s.ID()

	h.restart()
	s2, err := h.e.Session(id)
	if err != nil {
		t.Fatalf("the created session does not open in the next process: %v", err)
	}
	snap := s2.Snapshot()
	if snap.Draft || snap.State.PermissionPreset != "ask" || snap.Model.ID != "m1" || snap.Effort != "high" {
		t.Fatalf("reopened: draft %v, preset %q, model %+v, effort %q", snap.Draft, snap.State.PermissionPreset, snap.Model, snap.Effort)
	}
	if list, err := h.e.List(h.ws, false); err != nil || len(list) != 0 {
		t.Fatalf("an empty session is listed after a restart: %+v %v", list, err)
	}
	res, err := s2.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %q: %+v", got.Outcome, got.Error)
	}
	if list, err := h.e.List(h.ws, false); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list after the first prompt: %+v %v", list, err)
	}
}
