package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/engine"
)

func TestFlushAfterShutdownSavesThePendingResult(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	repair := h.breakSaves(s)
	h.prompt(s, "r2", "two")

	err := h.e.Shutdown(context.Background(), engine.Drain)
	var rec *engine.RecoveryError
	if !errors.As(err, &rec) || rec.Path == "" {
		t.Fatalf("want a recovery file: %v", err)
	}
	if _, err := os.Stat(rec.Path); err != nil {
		t.Fatal(err)
	}
	// The error is the host's copy: editing it changes nothing the flush does.
	path, keep := rec.Path, filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(keep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec.Path = keep
	if h.e.Unsaved() == nil {
		t.Fatal("Unsaved must report the result Shutdown could not save")
	}
	repair()
	snap, err := s.Flush()
	if err != nil {
		t.Fatalf("flush after shutdown: %v", err)
	}
	if snap.State.HasPendingSave || snap.State.MessageCount != 4 {
		t.Fatalf("flush did not save: %+v", snap.State)
	}
	if err := h.e.Unsaved(); err != nil {
		t.Fatalf("nothing is unsaved any more: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the stale recovery file is still there: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("flush removed a file the host named: %v", err)
	}
	// The flush released the store: a new engine writes the session.
	h.start()
	s2, err := h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Snapshot().State; st.MessageCount != 4 || st.Messages[3].Text() != "a2" {
		t.Fatalf("reopened: %+v", st)
	}
	if _, err := s2.SetTitle("still writable"); err != nil {
		t.Fatalf("the session stayed locked: %v", err)
	}
}

func TestShutdownTwiceWritesOneRecoveryFile(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	h.breakSaves(s)
	h.prompt(s, "r2", "two")
	var first, second *engine.RecoveryError
	if err := h.e.Shutdown(context.Background(), engine.Drain); !errors.As(err, &first) {
		t.Fatalf("want a recovery error: %v", err)
	}
	if err := h.e.Shutdown(context.Background(), engine.Drain); !errors.As(err, &second) {
		t.Fatalf("want a recovery error: %v", err)
	}
	if first.Path == "" || second.Path != first.Path {
		t.Fatalf("one result, one file: %q then %q", first.Path, second.Path)
	}
}

func TestDeleteSaysItDroppedThePendingSave(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]},{"steps":[{"text":"b1"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	h.breakSaves(s)
	h.prompt(s, "r2", "two")
	res, err := h.e.Delete(context.Background(), h.ws, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !res.DroppedPendingSave {
		t.Fatal("the delete must say the unsaved result was dropped")
	}
	other := h.newSession()
	h.prompt(other, "r3", "three")
	res, err = h.e.Delete(context.Background(), h.ws, other.ID())
	if err != nil || res.DroppedPendingSave {
		t.Fatalf("nothing was pending: %+v %v", res, err)
	}
}
