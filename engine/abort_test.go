package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Abort while a compaction holds the session pauses the queue like an
// abort of a run: the input queued during the compaction does not start
// when the compaction lets go.
func TestAbortDuringCompactionPausesTheQueue(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"text":"a1"}]},
		{"match":"two","steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"hang":true}]},
		{"match":"three","steps":[{"text":"a3"}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	r, _ = s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	h.settled(r.RunID)
	finish, err := s.BeginCompact()
	if err != nil {
		t.Fatal(err)
	}
	cerr := make(chan error, 1)
	go func() { _, err := finish(context.Background()); cerr <- err }()
	q, err := s.Prompt(engine.PromptInput{RequestID: "3", Text: "three"})
	if err != nil || !q.Queued {
		t.Fatalf("%+v %v", q, err)
	}
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := <-cerr; engine.CodeOf(err) != engine.CodeCancelled {
		t.Errorf("compaction: want cancelled, got %v", err)
	}
	if snap.Operation != engine.OpIdle || len(snap.State.Queue) != 1 {
		t.Errorf("abort did not pause draining: operation %q, runId %q, queue %d (queued input %s)", snap.Operation, snap.RunID, len(snap.State.Queue), q.RunID)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); snap.Operation != engine.OpIdle || len(snap.State.Queue) != 1 {
		t.Errorf("after the compaction settled: operation %q, queue %d", snap.Operation, len(snap.State.Queue))
	}
}

// Abort of the first run: the run's end would start background title
// work after the abort was requested; it starts none, so nothing changes
// the title once Abort has returned.
func TestAbortOfTheFirstRunStartsNoTitleWork(t *testing.T) {
	root := t.TempDir()
	script := `{"turns":[{"steps":[{"text":"partial"},{"hang":true}]},{"purpose":"title","steps":[{"text":"A title"}]}]}`
	os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600)
	os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","titles":true,"models":[{"id":"m1"}]}}}`), 0o600)
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "hello there"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { st := s.Snapshot().State.Streaming; return st != nil && len(st.Content) > 0 })
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Title work, had any started, would finish here. The session has
	// the title its first message gives it without the model.
	s.WaitForTitle()
	if got := s.Snapshot().State.Title; got != "hello there" {
		t.Errorf("title work ran after Abort returned (title %q)", got)
	}
}

// session/generate_title stopped by an abort answers cancelled.
func TestAbortedGenerateTitleAnswersCancelled(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"purpose":"title","steps":[{"touchFile":"asked"},{"hang":true}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	finish, err := s.BeginGenerateTitle()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := finish(context.Background()); errc <- err }()
	// Abort once the model is asked, so the cancellation reaches the call.
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(h.root, "asked")); return err == nil })
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; engine.CodeOf(err) != engine.CodeCancelled {
		t.Errorf("generate_title after abort: want cancelled, got code %s (%v)", engine.CodeOf(err), err)
	}
}

// The abort's wait is for the work it stopped: a prompt accepted after
// the abort starts a new run, and the abort's reply does not wait for it.
func TestAbortWaitsOnlyForTheWorkItStopped(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"hang":true}]},
		{"match":"two","steps":[{"text":"a2"},{"hang":true}]}]}`)
	s := h.newSession()
	r1, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	wait := s.RequestAbort()
	h.settled(r1.RunID)
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	r2, err := s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	if err != nil || r2.Queued {
		t.Fatalf("%+v %v", r2, err)
	}
	// The second run hangs until aborted: a wait for it would end only
	// with this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := wait(ctx)
	if err != nil {
		t.Fatalf("the abort's reply waited for the run started after it: %v", err)
	}
	if snap.Operation != engine.OpPrompt || snap.RunID != r2.RunID {
		t.Errorf("abort returned operation %q run %q; the run after it is %s", snap.Operation, snap.RunID, r2.RunID)
	}
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
}
