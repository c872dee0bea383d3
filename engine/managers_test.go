package engine_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
)

// listFiles returns every path under root, relative, sorted.
func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestInMemorySessionWritesNothingUnderTheDataRoot(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"kept in memory"}]}]}`)
	before := listFiles(t, h.root)
	cwd := t.TempDir()
	s, err := h.e.NewInMemorySession(cwd, engine.SessionOptions{Model: &engine.ModelRef{Provider: "fake", ID: "m1"}, Effort: "low", Permission: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %q %+v", got.Outcome, got.Error)
	}
	snap := s.Snapshot()
	if snap.State.MessageCount != 2 || snap.State.Messages[1].Text() != "kept in memory" || snap.Effort != "low" || snap.State.PermissionPreset != "ask" || snap.Cwd != cwd {
		t.Fatalf("state %+v effort %s cwd %s", snap.State, snap.Effort, snap.Cwd)
	}
	// Never listed, but found by id while it lives.
	if list, _ := h.e.List("", false); len(list) != 0 {
		t.Fatalf("listed: %+v", list)
	}
	if got, err := h.e.Session(s.ID()); err != nil || got != s {
		t.Fatalf("Session(id): %v %v", got, err)
	}
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}
	if after := listFiles(t, h.root); len(after) != len(before) {
		t.Fatalf("the data root changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCreateSessionIsPersistedAtOnceWithItsOptions(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{Model: &engine.ModelRef{Provider: "fake", ID: "m2"}, Permission: "workspace-write"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Snapshot().Draft {
		t.Fatal("a created session must not be a draft")
	}
	if _, err := os.Stat(filepath.Join(h.root, "sessions", h.ws, s.ID(), "header.json")); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	h.restart()
	s2, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	snap := s2.Snapshot()
	if snap.Model.ID != "m2" || snap.State.PermissionPreset != "workspace-write" {
		t.Fatalf("reopened %+v %s", snap.Model, snap.State.PermissionPreset)
	}
	// The one-off choice is not remembered for the next session.
	next, err := h.e.NewSession(h.ws)
	if err != nil || next.Snapshot().Model.ID != "m1" {
		t.Fatalf("next session's model %+v %v", next.Snapshot().Model, err)
	}
}

func TestSessionOptionsAreCheckedBeforeAnythingIsWritten(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	cases := []struct {
		opts engine.SessionOptions
		code engine.Code
	}{
		{engine.SessionOptions{Model: &engine.ModelRef{Provider: "fake", ID: "nope"}}, engine.CodeModelNotFound},
		{engine.SessionOptions{Effort: "turbo"}, engine.CodeInvalidModelEffort},
		{engine.SessionOptions{Model: &engine.ModelRef{Provider: "fake", ID: "m2"}, Effort: "high"}, engine.CodeInvalidModelEffort},
		{engine.SessionOptions{Permission: "root"}, engine.CodeInvalidParams},
	}
	for _, c := range cases {
		if err := h.e.CheckSessionOptions(c.opts); engine.CodeOf(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.opts, err, c.code)
		}
		if _, err := h.e.CreateSession(h.ws, c.opts); engine.CodeOf(err) != c.code {
			t.Errorf("create %+v: %v, want %s", c.opts, err, c.code)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(h.root, "sessions", h.ws)); len(entries) != 0 {
		t.Fatalf("refused options left sessions: %v", entries)
	}
	if _, err := engine.ParseModelRef("openrouter/deepseek/deepseek-r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ParseModelRef("gpt-5"); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("PROVIDER missing: %v", err)
	}
}

func TestCreateSessionWithoutProviderIsNoProvider(t *testing.T) {
	e, err := engine.New(engine.Options{DataRoot: t.TempDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CheckSessionOptions(engine.SessionOptions{}); engine.CodeOf(err) != engine.CodeNoProvider {
		t.Fatalf("check: %v", err)
	}
	if _, err := e.NewInMemorySession(t.TempDir(), engine.SessionOptions{}); engine.CodeOf(err) != engine.CodeNoProvider {
		t.Fatalf("in memory: %v", err)
	}
}

func TestContinueRecentOpensTheNewestElseCreates(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	first, created, err := h.e.ContinueRecent(h.ws, engine.SessionOptions{})
	if err != nil || !created {
		t.Fatalf("empty workspace: created=%v %v", created, err)
	}
	res, _ := first.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	h.settled(res.RunID)
	h.restart()
	got, created, err := h.e.ContinueRecent(h.ws, engine.SessionOptions{Effort: "high"})
	if err != nil || created || got.ID() != first.ID() {
		t.Fatalf("continued %v created=%v %v, want %s", got, created, err, first.ID())
	}
	if snap := got.Snapshot(); snap.Effort != "high" || snap.State.MessageCount != 2 {
		t.Fatalf("effort %s count %d", snap.Effort, snap.State.MessageCount)
	}
	// An archived session is not continued.
	if err := got.SetArchived(true); err != nil {
		t.Fatal(err)
	}
	again, created, err := h.e.ContinueRecent(h.ws, engine.SessionOptions{})
	if err != nil || !created || again.ID() == first.ID() {
		t.Fatalf("after archiving: %v created=%v %v", again, created, err)
	}
}

func TestOpenPathTakesOnlyAnExactSessionPath(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.root, "sessions", h.ws, s.ID())
	id := s.ID()
	h.restart()
	for _, p := range []string{dir, filepath.Join(dir, "header.json"), dir + "/"} {
		got, err := h.e.OpenPath(p)
		if err != nil || got.ID() != id {
			t.Fatalf("OpenPath(%s): %v %v", p, got, err)
		}
	}
	// Prefixes, ids, other files and places outside the root are refused.
	for p, code := range map[string]engine.Code{
		dir[:len(dir)-4]:                        engine.CodeSessionNotFound,
		id:                                      engine.CodeSessionNotFound,
		filepath.Join(dir, "messages.jsonl"):    engine.CodeInvalidParams,
		filepath.Join(h.root, "sessions", h.ws): engine.CodeInvalidParams,
		t.TempDir():                             engine.CodeInvalidParams,
	} {
		if _, err := h.e.OpenPath(p); engine.CodeOf(err) != code {
			t.Errorf("OpenPath(%s): %v, want %s", p, err, code)
		}
	}
}

func TestWaitReturnsAfterTheRunsLastEvents(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	// Hold the run's goroutine inside its agent_settled event: the run is
	// over (no active run) but has not published its last events yet.
	seen, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.e.Subscribe(func(ev engine.Event) {
		if _, ok := ev.Payload.(*engine.AgentSettledEvent); ok {
			once.Do(func() { close(seen); <-release })
		}
	})
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-seen
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Wait(cancelled); err == nil {
		t.Fatal("Wait reported the run finished while it was still publishing its settlement")
	}
	close(release)
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var settled, activity bool
	for _, ev := range h.events {
		switch p := ev.Payload.(type) {
		case *engine.AgentSettledEvent:
			settled = settled || p.RunID == res.RunID
		case *engine.SessionsChangedEvent:
			activity = activity || (settled && p.Reason == "activity")
		}
	}
	if !settled || !activity {
		t.Fatalf("Wait returned before the run's last events: settled=%v activity=%v", settled, activity)
	}
}
