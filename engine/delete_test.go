package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
)

// Delete during a compaction with a queued input: the session is closed
// before the abort, so the compaction letting go does not dispatch the
// queued input into the session being deleted.
func TestDeleteDuringCompactionStartsNoRun(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"text":"a1"}]},
		{"match":"two","steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"hang":true}]},
		{"match":"three","steps":[{"toolCall":{"name":"ls","arguments":{}}}]},
		{"match":"three","steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	r, _ = s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	h.settled(r.RunID)
	finish, err := s.BeginCompact()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = finish(context.Background()) }()
	q, err := s.Prompt(engine.PromptInput{RequestID: "3", Text: "three"})
	if err != nil || !q.Queued {
		t.Fatalf("%+v %v", q, err)
	}
	if err := h.e.Delete(context.Background(), h.ws, s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); snap.Operation != engine.OpIdle {
		t.Errorf("after Delete: operation %q run %q: a run started on a session being deleted", snap.Operation, snap.RunID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if p, ok := ev.Payload.(*engine.RunAcceptedEvent); ok && p.RunID == q.RunID {
			t.Errorf("the queued input %s was accepted as a run on the deleted session", q.RunID)
		}
	}
}
