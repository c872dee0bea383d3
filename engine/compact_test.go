package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
)

// scriptedRequests returns what the scripted model of h received.
func (h *harness) script() *provider.Scripted {
	h.t.Helper()
	p, err := provider.NewScripted(filepath.Join(h.root, "script.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	return p.(*provider.Scripted)
}

func TestManualCompactionChangesOnlyModelInput(t *testing.T) {
	h := newHarness(t, `{"log":"requests.jsonl","turns":[
		{"steps":[{"text":"a1"}]},
		{"steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"text":"SUMMARY-1"}]},
		{"steps":[{"text":"a3"}]}]}`)
	s := h.newSession()
	if _, err := s.Compact(context.Background()); engine.CodeOf(err) != engine.CodeNothingToCompact {
		t.Fatalf("empty session: want nothing_to_compact, got %v", err)
	}
	for i, text := range []string{"first", "second"} {
		res, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
			t.Fatalf("prompt %d: %+v", i, got.Error)
		}
	}
	snap, err := s.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Compaction == nil || snap.State.Compaction.MessageCount != 2 || snap.State.MessageCount != 4 || snap.State.CompactionStartedAt != nil {
		t.Fatalf("compaction state: %+v", snap.State)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "third", Text: "third"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	log, err := os.ReadFile(filepath.Join(h.root, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "SUMMARY-1") || strings.Contains(last, `"first"`) {
		t.Fatalf("the request after compaction must start from the checkpoint: %s", last)
	}
	// Originals stay, and the checkpoint survives reopening.
	id := s.ID()
	h.restart()
	s2, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	st := s2.Snapshot().State
	if st.MessageCount != 6 || st.Messages[0].Text() != "first" || st.Compaction == nil {
		t.Fatalf("after reopen: %+v", st)
	}
}

func TestContextBudgetKeepsTheMessage(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"never"}]}]}`)
	cfg := `{"compaction":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"small","contextWindow":2000,"maxOutputTokens":100}]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := h.newSession()
	big := strings.Repeat("lorem ipsum dolor sit amet ", 2000)
	res, err := s.Prompt(engine.PromptInput{RequestID: "big", Text: "read this", Files: []engine.File{{Name: "big.txt", Text: big}}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settled(res.RunID)
	if got.Outcome != engine.OutcomeError || got.Error.Code != engine.CodeContextBudget {
		t.Fatalf("want context_budget, got %+v", got)
	}
	st := s.Snapshot().State
	if c := st.Messages[0].Content; st.MessageCount != 1 || st.HasPendingSave || c[len(c)-1].Attachment != "file" {
		t.Fatalf("the user message and its file must be saved: %+v", st)
	}
	again, err := s.Prompt(engine.PromptInput{RequestID: "big", Text: "read this", Files: []engine.File{{Name: "big.txt", Text: big}}})
	if err != nil || again.RunID != res.RunID {
		t.Fatalf("the request id still deduplicates: %+v %v", again, err)
	}
}

func TestSkillExpandsOnlyInModelInput(t *testing.T) {
	h := newHarness(t, `{"log":"requests.jsonl","turns":[{"steps":[{"text":"ok"}]}]}`)
	ws, _ := h.e.Workspaces()
	dir := filepath.Join(ws[0].Cwd, ".loop", "skills", "review")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: review\ndescription: Review a change\n---\nSKILL-BODY: check every error path.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	skills, err := h.e.Skills(h.ws)
	if err != nil || len(skills) != 1 || skills[0].Description != "Review a change" {
		t.Fatalf("skills: %+v %v", skills, err)
	}
	s := h.newSession()
	if _, err := s.Prompt(engine.PromptInput{RequestID: "x", Text: "go", Skills: []string{"nope"}}); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("unknown skill: %v", err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r", Text: "go", Skills: []string{"review"}})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	log, _ := os.ReadFile(filepath.Join(h.root, "requests.jsonl"))
	if !strings.Contains(string(log), "SKILL-BODY") {
		t.Fatalf("model input lacks the skill: %s", log)
	}
	if m := s.Snapshot().State.Messages[0]; strings.Contains(m.Text(), "SKILL-BODY") || len(userBlocks(m.Content)) != 1 {
		t.Fatalf("stored message must not hold the skill: %+v", m)
	}
}

// userBlocks leaves out the context blocks Loop adds to a user message
// (convo.AttachmentContext): what the user sent.
func userBlocks(bs []convo.Block) []convo.Block {
	var out []convo.Block
	for _, b := range bs {
		if b.Attachment != convo.AttachmentContext {
			out = append(out, b)
		}
	}
	return out
}
