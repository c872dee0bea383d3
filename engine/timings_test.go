package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/store"
)

// Each run's commit writes its own timing once, after those already
// committed: timings.jsonl holds one record per prompt and header.json
// none, and the snapshot after reopening has them all.
func TestEachRunCommitsOnlyItsOwnTiming(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]},{"steps":[{"text":"a3"}]}]}`)
	s := h.newSession()
	var runs []string
	for i, text := range []string{"one", "two", "three"} {
		got := h.prompt(s, "r"+text, text)
		if got.Error != nil {
			t.Fatalf("prompt %d: %+v", i, got.Error)
		}
		runs = append(runs, got.RunID)
	}
	r, err := store.OpenRoot(h.root)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := r.ReadHeader(h.ws, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if hdr.TimingsCount != 3 {
		t.Fatalf("%d timing records after 3 prompts, want 3", hdr.TimingsCount)
	}
	dir := filepath.Join(h.root, "sessions", h.ws, s.ID())
	if b, err := os.ReadFile(filepath.Join(dir, "header.json")); err != nil || strings.Contains(string(b), "promptTimings") {
		t.Fatalf("header.json holds timings (%v): %s", err, b)
	}
	timings := h.reopen(s.ID()).Snapshot().State.PromptTimings
	if len(timings) != 3 {
		t.Fatalf("%d timings after reopening, want 3", len(timings))
	}
	for i, tm := range timings {
		if tm.ID != runs[i] || tm.UserMessageIndex != i || tm.MessageStartIndex != store.Some(2*i) ||
			tm.MessageEndIndex != store.Some(2*i+2) || !tm.FinishedAt.Set {
			t.Fatalf("timing %d: %+v", i, tm)
		}
	}
}
