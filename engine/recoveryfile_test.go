package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// runTwo is what a second run, "two" answered by "a2", adds to a history
// of n messages, and what it cost.
func runTwo(n int) ([]convo.Message, store.PromptTiming, convo.UsageSum) {
	ts := int64(1795972390000)
	usage := convo.UsageSum{Input: 30, Output: 4, TotalTokens: 34, Calls: 1, Unpriced: 1}
	msgs := []convo.Message{
		{Role: convo.RoleUser, Timestamp: ts, RequestID: "r2", Content: []convo.Block{{Type: convo.BlockText, Text: "two"}}},
		{Role: convo.RoleAssistant, Timestamp: ts + 5, Provider: "fake", Model: "m1", StopReason: convo.StopEnd,
			Usage: &convo.Usage{Input: 30, Output: 4, TotalTokens: 34}, Content: []convo.Block{{Type: convo.BlockText, Text: "a2"}}},
	}
	timing := store.PromptTiming{ID: "run-two", UserMessageIndex: n, MessageStartIndex: store.Some(n), MessageEndIndex: store.Some(n + 2),
		StartedAt: ts, FinishedAt: store.Some(ts + 5), Usage: usage}
	return msgs, timing, usage
}

// writeRecovery writes the recovery file Shutdown would write for s had
// the disk refused a second run (runTwo), beside the session's directory,
// from the committed header and history as they are now; it returns its
// path.
func (h *harness) writeRecovery(s *engine.Session, ms int64) string {
	h.t.Helper()
	hdr, err := h.e.Root().ReadHeader(s.WorkspaceID(), s.ID())
	if err != nil {
		h.t.Fatal(err)
	}
	st := s.Snapshot().State
	extra, timing, run := runTwo(len(st.Messages))
	usage := st.Usage
	usage.Add(convo.SessionUsage{UsageSum: run})
	ws := s.WorkspaceID()
	body, err := store.EncodeRecovery(&store.Recovery{
		SessionID: s.ID(), WorkspaceID: &ws, Cwd: s.Cwd(), Error: "save history: no space left on device", Header: hdr,
		Timings: append(st.PromptTimings, timing), Messages: append(st.Messages, extra...), Usage: usage,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	path := h.e.Root().Layout().Recovery(ws, s.ID(), ms)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// importFiles runs Engine.Import on paths and returns what became of each.
func (h *harness) importFiles(paths ...string) []engine.ImportResult {
	h.t.Helper()
	var out []engine.ImportResult
	if _, err := h.e.Import(context.Background(), paths, engine.ImportOptions{Progress: func(r engine.ImportResult) { out = append(out, r) }}); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// TestImportOfARecoveryFileCommitsTheUnsavedRunOnce: the session's
// snapshot names a recovery file waiting for it, found when the session
// opens; importing it commits the unsaved run's messages, timing and
// usage as a run's commit would; importing it again changes nothing and
// says so (existed); the next process finds the run and no file waiting.
func TestImportOfARecoveryFileCommitsTheUnsavedRunOnce(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	id := s.ID()
	path := h.writeRecovery(s, 1795972391000)
	before := s.Snapshot().State.Usage

	h.restart()
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().State.RecoveryFile; got != path {
		t.Fatalf("state.recoveryFile %q, want %q", got, path)
	}
	res := h.importFiles(path)
	if len(res) != 1 || res[0].Err != nil || res[0].Existed || res[0].SessionID != id || res[0].Messages != 4 || res[0].Format != store.RecoveryFormat {
		t.Fatalf("import: %+v", res)
	}
	_, timing, run := runTwo(2)
	check := func(when string, st engine.State) {
		t.Helper()
		want := before
		want.Add(convo.SessionUsage{UsageSum: run})
		if st.MessageCount != 4 || st.Messages[2].Text() != "two" || st.Messages[3].Text() != "a2" || st.HasPendingSave {
			t.Fatalf("%s: %d messages %+v", when, st.MessageCount, st.Messages)
		}
		if len(st.PromptTimings) != 2 || st.PromptTimings[1] != timing {
			t.Fatalf("%s: timings %+v", when, st.PromptTimings)
		}
		if st.Usage != want || !st.Unread || st.RecoveryFile != "" {
			t.Fatalf("%s: usage %+v (want %+v), unread %v, recoveryFile %q", when, st.Usage, want, st.Unread, st.RecoveryFile)
		}
	}
	check("imported", s.Snapshot().State)
	again := h.importFiles(path)
	if len(again) != 1 || again[0].Err != nil || !again[0].Existed || again[0].SessionID != id || again[0].Messages != 4 {
		t.Fatalf("import again: %+v", again)
	}
	h.restart()
	s, err = h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	check("reopened", s.Snapshot().State)
}

// TestImportOfARecoveryFileIntoASessionThatWentOnMakesACopy: the
// session committed another run after the file was written, so its
// history no longer leads to the file's; the import keeps both: the file
// becomes a new session, the original is left as it is, and the file no
// longer waits. Importing it again finds that copy.
func TestImportOfARecoveryFileIntoASessionThatWentOnMakesACopy(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a3"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	id := s.ID()
	path := h.writeRecovery(s, 1795972391000)
	h.prompt(s, "r3", "three")
	h.restart()
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().State.RecoveryFile; got != path {
		t.Fatalf("a file the session went on without still waits: recoveryFile %q, want %q", got, path)
	}
	res := h.importFiles(path)
	if len(res) != 1 || res[0].Err != nil || res[0].Existed || res[0].SessionID == id || res[0].Messages != 4 || res[0].Note == "" {
		t.Fatalf("import: %+v", res)
	}
	st := s.Snapshot().State
	if st.MessageCount != 4 || st.Messages[2].Text() != "three" || st.RecoveryFile != "" {
		t.Fatalf("the original changed or still has the file waiting: %+v", st)
	}
	cp, err := h.e.Session(res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if st := cp.Snapshot().State; st.Messages[2].Text() != "two" || len(st.PromptTimings) != 2 || cp.WorkspaceID() != h.ws {
		t.Fatalf("the copy: %+v", st)
	}
	again := h.importFiles(path)
	if len(again) != 1 || again[0].Err != nil || !again[0].Existed || again[0].SessionID != res[0].SessionID {
		t.Fatalf("import again: %+v", again)
	}
}

// TestImportOfARecoveryFileOfADraftCreatesTheSession: a draft's first
// run never reached the disk; its recovery file makes the session, under
// the draft's id, in its workspace and cwd.
func TestImportOfARecoveryFileOfADraftCreatesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	d := h.newSession()
	id, cwd := d.ID(), d.Cwd()
	msgs, timing, run := runTwo(0)
	body, err := store.EncodeRecovery(&store.Recovery{
		SessionID: id, WorkspaceID: &h.ws, Cwd: cwd, Error: "create session: no space left on device",
		Header:  store.Header{Format: store.FormatName, Version: store.FormatVersion, ID: id, WorkspaceID: &h.ws, Cwd: cwd, CreatedAt: 1795972389000, UpdatedAt: 1795972389000},
		Timings: []store.PromptTiming{timing}, Messages: msgs, Usage: convo.SessionUsage{UsageSum: run},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := h.e.Root().Layout().Recovery(h.ws, id, 1795972391000)
	if err := os.MkdirAll(h.e.Root().Layout().Scope(h.ws), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	h.restart()
	res := h.importFiles(path)
	if len(res) != 1 || res[0].Err != nil || res[0].Existed || res[0].SessionID != id || res[0].Messages != 2 || res[0].Cwd != cwd {
		t.Fatalf("import: %+v", res)
	}
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Snapshot().State; st.MessageCount != 2 || st.Usage.UsageSum != run || st.RecoveryFile != "" || s.WorkspaceID() != h.ws {
		t.Fatalf("the session: %+v", st)
	}
	again := h.importFiles(path)
	if len(again) != 1 || !again[0].Existed || again[0].SessionID != id {
		t.Fatalf("import again: %+v", again)
	}
}

// TestImportOfARecoveryFileIsRefusedWhileAnotherProcessWritesTheSession:
// a session another engine holds is refused like any write
// (session_locked), and nothing is written.
func TestImportOfARecoveryFileIsRefusedWhileAnotherProcessWritesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	path := h.writeRecovery(s, 1795972391000)
	other, err := engine.New(engine.Options{DataRoot: h.root})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Shutdown(context.Background(), engine.Drain)
	var res []engine.ImportResult
	tot, err := other.Import(context.Background(), []string{path}, engine.ImportOptions{Progress: func(r engine.ImportResult) { res = append(res, r) }})
	if err != nil || tot.Failed != 1 || engine.CodeOf(res[0].Err) != engine.CodeSessionLocked {
		t.Fatalf("import while another engine holds the session: %+v, %v", res, err)
	}
	if st := s.Snapshot().State; st.MessageCount != 2 {
		t.Fatalf("the refused import wrote: %d messages", st.MessageCount)
	}
}

// TestTheRecoveryFileShutdownWritesIsInTheSnapshotUntilAFlushSavesIt: a
// file this process writes is named at once (no directory is read), and
// a flush that saves the result after all removes the file and the name.
func TestTheRecoveryFileShutdownWritesIsInTheSnapshotUntilAFlushSavesIt(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	repair := h.breakSaves(s)
	h.prompt(s, "r2", "two")
	if st := s.Snapshot().State; st.RecoveryFile != "" {
		t.Fatalf("no file was written yet: %q", st.RecoveryFile)
	}
	err := h.e.Shutdown(context.Background(), engine.Drain)
	var rec *engine.RecoveryError
	if !errors.As(err, &rec) || rec.Path == "" {
		t.Fatalf("want a recovery file: %v", err)
	}
	if got := s.Snapshot().State.RecoveryFile; got != rec.Path {
		t.Fatalf("state.recoveryFile %q, want %q", got, rec.Path)
	}
	repair()
	snap, err := s.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.RecoveryFile != "" {
		t.Fatalf("the flush saved the result, but the file is still named: %q", snap.State.RecoveryFile)
	}
}

// TestImportOfAnAppliedRecoveryFileSaysSoWhileAnotherProcessWritesTheSession:
// a file the session already holds needs no write, so it is found
// imported (existed) even while another engine writes the session.
func TestImportOfAnAppliedRecoveryFileSaysSoWhileAnotherProcessWritesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	path := h.writeRecovery(s, 1795972391000)
	if res := h.importFiles(path); len(res) != 1 || res[0].Err != nil || res[0].Existed {
		t.Fatalf("import: %+v", res)
	}
	other, err := engine.New(engine.Options{DataRoot: h.root})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Shutdown(context.Background(), engine.Drain)
	var res []engine.ImportResult
	tot, err := other.Import(context.Background(), []string{path}, engine.ImportOptions{Progress: func(r engine.ImportResult) { res = append(res, r) }})
	if err != nil || tot.Existed != 1 || res[0].Err != nil || res[0].SessionID != s.ID() || res[0].Messages != 4 {
		t.Fatalf("import again from another engine: %+v, %v", res, err)
	}
}

// TestImportOfARecoveryFileNamingAnotherWorkspaceIsRefused: the file's
// workspace is part of its identity; a file that names the session's id
// in another workspace is not that session's, and nothing is written.
func TestImportOfARecoveryFileNamingAnotherWorkspaceIsRefused(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	path := h.writeRecovery(s, 1795972391000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.e.AddWorkspace(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(t.TempDir(), "forged.json")
	if err := os.WriteFile(forged, []byte(strings.ReplaceAll(string(data), h.ws, other.ID)), 0o600); err != nil {
		t.Fatal(err)
	}
	res := h.importFiles(forged)
	if len(res) != 1 || engine.CodeOf(res[0].Err) != engine.CodeInvalidParams {
		t.Fatalf("import: %+v", res)
	}
	if st := s.Snapshot().State; st.MessageCount != 2 {
		t.Fatalf("the refused import wrote: %d messages", st.MessageCount)
	}
}
