package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
)

// budgetHarness is a harness whose only model has a small window.
func budgetHarness(t *testing.T, compaction, model, script string) *harness {
	t.Helper()
	h := newHarness(t, script)
	cfg := `{"compaction":` + compaction + `,"titles":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[` + model + `]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

type loggedRequest struct {
	Purpose         string `json:"purpose"`
	MaxOutputTokens int    `json:"maxOutputTokens"`
}

func (h *harness) requests() []loggedRequest {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, "requests.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		h.t.Fatal(err)
	}
	var out []loggedRequest
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r loggedRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func (h *harness) timingEvents(runID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range h.events {
		if p, ok := ev.Payload.(*engine.PromptTimingEvent); ok && p.Timing.ID == runID {
			n++
		}
	}
	return n
}

func TestMessageThatCannotFitAloneSettlesWithoutCompacting(t *testing.T) {
	h := budgetHarness(t, `{"reserveTokens":100}`, `{"id":"small","contextWindow":2000,"maxOutputTokens":100}`,
		`{"log":"requests.jsonl","turns":[
			{"match":"one","steps":[{"text":"a1"}]},
			{"match":"two","steps":[{"text":"a2"}]},
			{"purpose":"summary","steps":[{"text":"NEVER ASKED"}]},
			{"steps":[{"text":"never"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	h.prompt(s, "r2", "two")
	big := strings.Repeat("lorem ipsum dolor sit amet ", 2000)
	res, err := s.Prompt(engine.PromptInput{RequestID: "big", Text: "read this", Files: []engine.File{{Name: "big.txt", Text: big}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeContextBudget {
		t.Fatalf("want context_budget, got %+v", got)
	}
	if reqs := h.requests(); len(reqs) != 2 {
		t.Fatalf("want no model call for the message that cannot fit: %+v", reqs)
	}
	st := s.Snapshot().State
	if st.Compaction != nil {
		t.Fatalf("a checkpoint was saved although compacting could not help: %+v", st.Compaction)
	}
	if st.MessageCount != 5 || st.Messages[4].Content[1].Attachment != "file" || len(st.PromptTimings) != 3 {
		t.Fatalf("the message, its file and its timing must be saved: %+v", st)
	}
}

func TestAutoCompactionBoundsTheSummaryToTheRoomLeft(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 250)
	h := budgetHarness(t, `{"reserveTokens":100}`, `{"id":"small","contextWindow":4000,"maxOutputTokens":4000}`,
		`{"log":"requests.jsonl","turns":[
			{"match":"one","steps":[{"text":"`+long+`"}]},
			{"purpose":"summary","steps":[{"text":"SUMMARY"}]},
			{"match":"two","steps":[{"text":"fits"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one "+long)
	if got := h.prompt(s, "r2", "two"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("the compacted request must fit: %+v", got.Error)
	}
	reqs := h.requests()
	if len(reqs) != 3 || reqs[1].Purpose != "summary" {
		t.Fatalf("want main, summary, main: %+v", reqs)
	}
	if n := reqs[1].MaxOutputTokens; n >= 4000 || n < 256 {
		t.Fatalf("the summary must be bounded by the room the kept messages leave, got %d", n)
	}
	if s.Snapshot().State.Compaction == nil {
		t.Fatal("no checkpoint")
	}
}

func TestResumeRefusedByTheContextBudgetStoresNoTiming(t *testing.T) {
	h := budgetHarness(t, `{"enabled":false}`, `{"id":"small","contextWindow":2000,"maxOutputTokens":100}`,
		`{"turns":[{"steps":[{"text":"never"}]}]}`)
	s := h.newSession()
	big := strings.Repeat("lorem ipsum dolor sit amet ", 2000)
	res, err := s.Prompt(engine.PromptInput{RequestID: "big", Text: "read this", Files: []engine.File{{Name: "big.txt", Text: big}}})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	before := s.Snapshot().State
	if !before.CanResume || len(before.PromptTimings) != 1 {
		t.Fatalf("want a resumable session with the prompt's timing: %+v", before)
	}
	resumed, err := s.Resume()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(resumed.RunID); got.Error == nil || got.Error.Code != engine.CodeContextBudget {
		t.Fatalf("want context_budget, got %+v", got)
	}
	for _, st := range []engine.State{s.Snapshot().State, h.reopen(s.ID()).Snapshot().State} {
		if len(st.PromptTimings) != 1 || st.PromptTimings[0].ID != res.RunID {
			t.Fatalf("a refused resume stored a timing: %+v", st.PromptTimings)
		}
		if st.MessageCount != before.MessageCount {
			t.Fatalf("a refused resume changed the history: %d messages", st.MessageCount)
		}
	}
	if n := h.timingEvents(resumed.RunID); n != 0 {
		t.Fatalf("a refused resume published %d timing events", n)
	}
}
