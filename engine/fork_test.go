package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// promptAndWait runs one prompt to its end.
func promptAndWait(t *testing.T, s *engine.Session, id, text string) {
	t.Helper()
	res, err := s.Prompt(engine.PromptInput{RequestID: id, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = res
}

func historyTexts(msgs []convo.Message) []string {
	var out []string
	for i := range msgs {
		out = append(out, msgs[i].Text())
	}
	return out
}

const threeAnswers = `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]},{"steps":[{"text":"four"}]}]}`

func TestForkContinuesFromThePrefixAndLeavesTheParentAlone(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	f, err := s.Fork(2, "a fork")
	if err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	if snap.Parent == nil || snap.Parent.SessionID != s.ID() || snap.Parent.MessageCount != 2 || snap.State.MessageCount != 2 || snap.State.Title != "a fork" {
		t.Fatalf("fork snapshot: parent %+v, state %+v", snap.Parent, snap.State)
	}
	if len(snap.State.PromptTimings) != 1 {
		t.Fatalf("fork timings: %+v", snap.State.PromptTimings)
	}
	promptAndWait(t, f, "f1", "other")
	if got := historyTexts(f.Snapshot().State.Messages); len(got) != 4 || got[2] != "other" || got[3] != "three" {
		t.Fatalf("fork history: %q", got)
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("the parent has %d messages, want 4", n)
	}
	fid := f.ID()
	h.restart()
	o, err := h.e.Session(fid)
	if err != nil {
		t.Fatal(err)
	}
	if got := historyTexts(o.Snapshot().State.Messages); len(got) != 4 || got[0] != "first" {
		t.Fatalf("reopened fork: %q", got)
	}
	list, err := h.e.List(h.ws, false)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, sum := range list {
		if (sum.ID == fid) != (sum.Parent != nil) {
			t.Fatalf("summary %s parent %+v", sum.ID, sum.Parent)
		}
	}
}

func TestForkRefusesBadCountsAndChangesNothing(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"toolCall":{"id":"c1","name":"ls","arguments":{}}}]},{"steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	if _, err := s.Fork(0, ""); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("fork of a draft: %v", err)
	}
	promptAndWait(t, s, "r1", "go")
	for _, k := range []int{-1, 5, 2} { // 2 is the tool result
		if _, err := s.Fork(k, ""); engine.CodeOf(err) != engine.CodeInvalidParams {
			t.Fatalf("fork at %d: %v, want invalid_params", k, err)
		}
		for _, files := range []bool{false, true} {
			if _, _, err := s.Rewind(context.Background(), k, files); engine.CodeOf(err) != engine.CodeInvalidParams {
				t.Fatalf("rewind to %d (files %v): %v, want invalid_params", k, files, err)
			}
		}
	}
	if list, _ := h.e.List(h.ws, false); len(list) != 1 {
		t.Fatalf("refused forks left sessions: %+v", list)
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("%d messages after refusals, want 4", n)
	}
}

func TestRewindFollowsThePrefixAndCanBeUndone(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	before := s.Snapshot()
	snap, forkID, err := s.Rewind(context.Background(), 2, false)
	if err != nil {
		t.Fatal(err)
	}
	st := snap.State
	if st.MessageCount != 2 || len(st.Messages) != 2 || len(st.PromptTimings) != 1 || st.Unread || forkID == "" {
		t.Fatalf("rewound: %+v fork %q", st, forkID)
	}
	if st.Usage.Calls != 1 || before.State.Usage.Calls < 2 {
		t.Fatalf("usage %+v, before %+v", st.Usage, before.State.Usage)
	}
	// The model's context follows: the next prompt's request holds the
	// prefix and the new prompt only.
	promptAndWait(t, s, "r3", "again")
	if got := historyTexts(s.Snapshot().State.Messages); len(got) != 4 || got[2] != "again" || got[3] != "three" {
		t.Fatalf("after the rewind: %q", got)
	}
	// Undo: the fork holds the whole history before the rewind.
	f, err := h.e.Session(forkID)
	if err != nil {
		t.Fatal(err)
	}
	if got := historyTexts(f.Snapshot().State.Messages); len(got) != 4 || got[2] != "second" || got[3] != "two" {
		t.Fatalf("the dropped fork: %q", got)
	}
	// A retried prompt of the dropped part still answers its first run.
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "second"}); err != nil {
		t.Fatal(err)
	}
}

func TestEditRewindsAndPromptsInOneAdmission(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	res, err := s.Edit(1, engine.PromptInput{RequestID: "e1", Text: "second, edited"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued || res.RunID == "" || res.ForkedID == "" {
		t.Fatalf("edit answer: %+v", res)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := historyTexts(s.Snapshot().State.Messages); len(got) != 4 || got[2] != "second, edited" || got[3] != "three" {
		t.Fatalf("after the edit: %q", got)
	}
	// A retry answers the same run and rewinds nothing.
	again, err := s.Edit(1, engine.PromptInput{RequestID: "e1", Text: "second, edited"})
	if err != nil || again.RunID != res.RunID {
		t.Fatalf("retried edit: %+v %v", again, err)
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("a retried edit changed the history: %d messages", n)
	}
	if _, err := s.Edit(5, engine.PromptInput{RequestID: "e2", Text: "x"}); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("edit of a user message that does not exist: %v", err)
	}
}

func TestEditRefusedBeforeTheRewindChangesNothing(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	other := "another-stream"
	for _, in := range []engine.PromptInput{
		{RequestID: "e1", Text: "x", StreamID: &other},
		{RequestID: "e2", Text: "x", Skills: []string{"no-such-skill"}},
		{RequestID: "r1", Text: "not the first text"},
	} {
		if _, err := s.Edit(0, in); err == nil {
			t.Fatalf("edit %+v was accepted", in)
		}
		if n := s.Snapshot().State.MessageCount; n != 4 {
			t.Fatalf("a refused edit (%+v) left %d messages", in, n)
		}
	}
	if list, _ := h.e.List(h.ws, false); len(list) != 1 {
		t.Fatalf("a refused edit made a fork: %+v", list)
	}
}

// A retried edit answers its first attempt whole: the same run and the
// same fork (the one that keeps what the edit dropped), in this process
// and in the next, and it rewinds nothing. A client retries because the
// first answer was lost; without the fork's id it could not undo the edit.
func TestRetriedEditAnswersItsFork(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first")
	promptAndWait(t, s, "r2", "second")
	in := engine.PromptInput{RequestID: "e1", Text: "second, edited"}
	res, err := s.Edit(1, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, where := range []string{"this process", "the next process"} {
		if where == "the next process" {
			s = h.reopen(s.ID())
		}
		again, err := s.Edit(1, in)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if again.RunID != res.RunID || again.ForkedID != res.ForkedID {
			t.Fatalf("%s: the retried edit answered %+v, want run %s and fork %s", where, again, res.RunID, res.ForkedID)
		}
		if n := s.Snapshot().State.MessageCount; n != 4 {
			t.Fatalf("%s: a retried edit changed the history: %d messages", where, n)
		}
		if list, _ := h.e.List(h.ws, false); len(list) != 2 {
			t.Fatalf("%s: %d sessions after the retry, want the session and the edit's fork", where, len(list))
		}
	}
}

// Editing a session's first prompt (or rewinding to before it) leaves an
// auto title that names what was dropped: the new first prompt's run
// gives the fallback title of the new one. A manual title stays.
func TestEditingTheFirstPromptRetitlesASessionWhoseTitleWasAuto(t *testing.T) {
	h := newHarness(t, threeAnswers)
	s := h.newSession()
	promptAndWait(t, s, "r1", "first question")
	if st := s.Snapshot().State; st.Title != "first question" || st.TitleSource != store.TitleAuto {
		t.Fatalf("title after the first run: %q (%s)", st.Title, st.TitleSource)
	}
	if _, err := s.Edit(0, engine.PromptInput{RequestID: "e1", Text: "another topic"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Snapshot().State; st.Title != "another topic" || st.TitleSource != store.TitleAuto {
		t.Fatalf("title after the first prompt was edited: %q (%s), want the new prompt's", st.Title, st.TitleSource)
	}
	if _, err := s.SetTitle("mine"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Rewind(context.Background(), 0, false); err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, s, "r2", "third topic")
	if st := s.Snapshot().State; st.Title != "mine" {
		t.Fatalf("a manual title after a rewind to 0 and a prompt: %q", st.Title)
	}
}
