package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/engine"
)

// titleHarness is a harness whose scripted model makes background titles
// when titles is true.
func titleHarness(t *testing.T, titles bool, script string) *harness {
	t.Helper()
	h := newHarness(t, script)
	on := "false"
	if titles {
		on = "true"
	}
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","titles":` + on + `,"models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestFirstRunTitlesTheSessionFromItsFirstMessageWhenNoTitleIsGenerated(t *testing.T) {
	h := titleHarness(t, false, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]}]}`)
	s := h.newSession()
	r, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "  How do I   fix\nthe flaky test?"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(r.RunID)
	// The run starts its title after it settles: Wait, then WaitForTitle.
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.WaitForTitle()
	if st := s.Snapshot().State; st.Title != "How do I fix" || st.TitleSource != "auto" {
		t.Fatalf("title %q (%s)", st.Title, st.TitleSource)
	}
	// A later prompt leaves it.
	r, _ = s.Prompt(engine.PromptInput{RequestID: "2", Text: "and another thing"})
	h.settled(r.RunID)
	id := s.ID()
	h.restart()
	list, err := h.e.List(h.ws, false)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Title != "How do I fix" {
		t.Fatalf("list %+v %v", list, err)
	}
}

func TestGeneratedTitleReplacesTheFallbackTitle(t *testing.T) {
	h := titleHarness(t, true, `{"turns":[{"steps":[{"text":"one"}]},{"purpose":"title","steps":[{"text":"A generated title"}]}]}`)
	s := h.newSession()
	r, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(r.RunID)
	// The run starts its title after it settles: Wait, then WaitForTitle.
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.WaitForTitle()
	if st := s.Snapshot().State; st.Title != "A generated title" || st.TitleSource != "auto" {
		t.Fatalf("title %q (%s)", st.Title, st.TitleSource)
	}
}

func TestManualTitleIsNeverReplacedByTheFallbackTitle(t *testing.T) {
	h := titleHarness(t, false, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTitle("Mine"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(r.RunID)
	if st := s.Snapshot().State; st.Title != "Mine" || st.TitleSource != "manual" {
		t.Fatalf("title %q (%s)", st.Title, st.TitleSource)
	}
}
