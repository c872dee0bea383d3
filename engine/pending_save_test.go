package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/convo"
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

// A result the disk refused is never deleted without a word: the delete
// is refused with pending_save (a typed *engine.Error), the session stays
// live with its result, and once a flush has saved it, the delete goes
// ahead.
func TestDeleteRefusesASessionWithAnUnsavedResult(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	repair := h.breakSaves(s)
	h.prompt(s, "r2", "two")
	err := h.e.Delete(context.Background(), h.ws, s.ID())
	var refused *engine.Error
	if !errors.As(err, &refused) || refused.Code != engine.CodePendingSave {
		t.Fatalf("delete with an unsaved result: %v, want pending_save", err)
	}
	live, err := h.e.Session(s.ID())
	if err != nil || live != s {
		t.Fatalf("the refused delete let go of the session: %v", err)
	}
	if st := s.Snapshot().State; !st.HasPendingSave || len(st.Messages) != 4 || st.Messages[3].Text() != "a2" {
		t.Fatalf("the unsaved result is gone: pending %v, %d messages", st.HasPendingSave, len(st.Messages))
	}
	if _, err := os.Stat(filepath.Join(h.root, "sessions", h.ws, s.ID(), "header.json")); err != nil {
		t.Fatalf("the refused delete removed files: %v", err)
	}
	repair()
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Delete(context.Background(), h.ws, s.ID()); err != nil {
		t.Fatalf("delete once saved: %v", err)
	}
	if _, err := h.e.Session(s.ID()); engine.CodeOf(err) != engine.CodeSessionNotFound {
		t.Fatalf("after the delete: %v", err)
	}
}

// TestRecoveryFileKeepsTheUnsavedRunsUsage: when the disk refuses a run's
// result even at shutdown, the recovery file holds the session's usage
// ledger with the run's calls (as state.usage has them; the committed
// header lacks them) and the run's prompt timing with its usage, so a
// user who recovers the result also recovers what it cost.
func TestRecoveryFileKeepsTheUnsavedRunsUsage(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.WaitForTitle()
	h.breakSaves(s)
	res, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeStorageError {
		t.Fatalf("the save must fail: %+v", got)
	}
	live := s.Snapshot().State.Usage

	err = h.e.Shutdown(context.Background(), engine.Drain)
	var rec *engine.RecoveryError
	if !errors.As(err, &rec) || rec.Path == "" {
		t.Fatalf("want a recovery file: %v", err)
	}
	b, err := os.ReadFile(rec.Path)
	if err != nil {
		t.Fatal(err)
	}
	// store's usage types decode the file's usage objects: encoding/json
	// matches their untagged fields to the members regardless of case,
	// and TestRecoveryFileLayout holds the members' spelling.
	var file struct {
		Header struct {
			Usage         convo.SessionUsage `json:"usage"`
			PromptTimings []struct {
				ID    string         `json:"id"`
				Usage convo.UsageSum `json:"usage"`
			} `json:"promptTimings"`
		} `json:"header"`
		Usage *convo.SessionUsage `json:"usage"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("recovery file: %v\n%s", err, b)
	}
	main1 := convo.UsageSum{Input: 1000, Output: 200, TotalTokens: 1200, Calls: 1, Cost: (1000*2 + 200*10) / 1e6}
	title := convo.UsageSum{Input: 50, Output: 10, TotalTokens: 60, Calls: 1, Cost: (50*2 + 10*10) / 1e6}
	main2 := convo.UsageSum{Input: 2000, Output: 300, CacheRead: 500, CacheWrite: 100, TotalTokens: 2900, Calls: 1, Cost: (2000*2 + 300*10 + 500*0.5 + 100*2.5) / 1e6}
	committed, all := main1, main1
	committed.Add(title)
	all.Add(title)
	all.Add(main2)
	if file.Usage == nil {
		t.Fatalf("the recovery file has no usage:\n%s", b)
	}
	wantSum(t, "recovery usage", file.Usage.UsageSum, all)
	wantSum(t, "recovery usage = state.usage", file.Usage.UsageSum, live.UsageSum)
	wantSum(t, "recovery usage.title", file.Usage.Title, title)
	if !file.Usage.Compaction.IsZero() {
		t.Fatalf("no compaction ran: %+v", file.Usage.Compaction)
	}
	wantSum(t, "committed header usage", file.Header.Usage.UsageSum, committed)
	ts := file.Header.PromptTimings
	if len(ts) != 2 || ts[1].ID != res.RunID {
		t.Fatalf("want the committed timing and the unsaved run's: %s", b)
	}
	wantSum(t, "the unsaved run's timing", ts[1].Usage, main2)
}
