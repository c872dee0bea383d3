package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/gitsnap"
	"github.com/loopdev/loop/store"
)

// toolTurn is a scripted turn that calls one tool.
func callTurn(id, name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"steps": []any{map[string]any{"toolCall": map[string]any{"id": id, "name": name, "arguments": args}}}})
	return string(b)
}

const doneTurn = `{"steps":[{"text":"done"}]}`

func turns(ts ...string) string { return `{"turns":[` + strings.Join(ts, ",") + `]}` }

// fullAccess makes a session that may write and run commands.
func (h *harness) fullAccess() *engine.Session {
	h.t.Helper()
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{Permission: "full-access"})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// run prompts and waits for the run to complete.
func (h *harness) run(s *engine.Session, text string) {
	h.t.Helper()
	res, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text})
	if err != nil {
		h.t.Fatal(err)
	}
	if p := h.settled(res.RunID); p.Outcome != engine.OutcomeCompleted {
		h.t.Fatalf("run %q: %s %+v", text, p.Outcome, p.Error)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is required on CI")
		}
		t.Skip("no git")
	}
}

func changesOf(t *testing.T, s *engine.Session) []engine.RunChanges {
	t.Helper()
	runs, err := s.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func filesOf(rc engine.RunChanges) []string {
	var out []string
	for _, f := range rc.Files {
		out = append(out, f.Path+":"+f.Change)
	}
	return out
}

func TestRestoreFilesPutsBackWhatWriteAndEditChanged(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "new.txt", "content": "created\n"}),
		callTurn("e1", "edit", map[string]any{"path": "old.txt", "oldText": "one", "newText": "ONE"}),
		doneTurn,
		callTurn("w2", "write", map[string]any{"path": "old.txt", "content": "rewritten\n"}),
		doneTurn,
	))
	s := h.fullAccess()
	old := filepath.Join(s.Cwd(), "old.txt")
	writeFile(t, old, "one\ntwo\n")
	h.run(s, "first")
	h.run(s, "second")
	if got := readFile(t, old); got != "rewritten\n" {
		t.Fatalf("old.txt after the runs: %q", got)
	}
	runs := changesOf(t, s)
	if len(runs) != 2 || !slices.Equal(filesOf(runs[0]), []string{"new.txt:added", "old.txt:modified"}) ||
		!slices.Equal(filesOf(runs[1]), []string{"old.txt:modified"}) || runs[0].MessageStartIndex != 0 || runs[1].MessageStartIndex != runs[0].MessageEndIndex {
		t.Fatalf("changes: %+v", runs)
	}
	// Back to before the second run: old.txt as the first left it.
	res, err := s.RestoreFiles(context.Background(), runs[1].MessageStartIndex, false)
	if err != nil || !slices.Equal(res.Restored, []string{"old.txt"}) || len(res.Conflicts) != 0 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if got := readFile(t, old); got != "ONE\ntwo\n" {
		t.Fatalf("old.txt restored to %q", got)
	}
	// Back to the start: the new file goes, the old one is as it was.
	res, err = s.RestoreFiles(context.Background(), 0, false)
	if err != nil || !slices.Equal(res.Restored, []string{"new.txt", "old.txt"}) || len(res.Conflicts) != 0 {
		t.Fatalf("restore to 0: %+v %v", res, err)
	}
	if got, gotNew := readFile(t, old), readFile(t, filepath.Join(s.Cwd(), "new.txt")); got != "one\ntwo\n" || gotNew != "<absent>" {
		t.Fatalf("restored to 0: old.txt %q, new.txt %q", got, gotNew)
	}
}

func TestRestoreFilesRefusesFilesChangedOutsideLoopUnlessForced(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "by loop\n"}),
		callTurn("w2", "write", map[string]any{"path": "b.txt", "content": "by loop\n"}),
		doneTurn,
	))
	s := h.fullAccess()
	a, b := filepath.Join(s.Cwd(), "a.txt"), filepath.Join(s.Cwd(), "b.txt")
	writeFile(t, a, "original a\n")
	h.run(s, "go")
	writeFile(t, b, "edited by the user\n")
	res, err := s.RestoreFiles(context.Background(), 0, false)
	if err != nil || len(res.Restored) != 0 || !slices.Equal(res.Conflicts, []string{"b.txt"}) {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if readFile(t, a) != "by loop\n" || readFile(t, b) != "edited by the user\n" {
		t.Fatal("a conflict changed files")
	}
	res, err = s.RestoreFiles(context.Background(), 0, true)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt", "b.txt"}) || !slices.Equal(res.Conflicts, []string{"b.txt"}) {
		t.Fatalf("forced restore: %+v %v", res, err)
	}
	if readFile(t, a) != "original a\n" || readFile(t, b) != "<absent>" {
		t.Fatalf("forced restore left a %q, b %q", readFile(t, a), readFile(t, b))
	}
	// What the restore left is what Loop last left: no conflict now.
	res, err = s.RestoreFiles(context.Background(), 0, false)
	if err != nil || len(res.Restored) != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("restore again: %+v %v", res, err)
	}
}

// repoState is what a snapshot must never change in the user's
// repository.
func repoState(t *testing.T, dir string) string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join([]string{
		git(t, dir, "rev-parse", "HEAD"),
		git(t, dir, "for-each-ref"),
		git(t, dir, "stash", "list"),
		git(t, dir, "status", "--porcelain", "--untracked-files=all"),
		string(bytes.Clone(index)),
	}, "\n--\n")
}

func TestBashSnapshotsLeaveTheUsersRepositoryUntouched(t *testing.T) {
	needGit(t)
	h := newHarness(t, turns(
		callTurn("b1", "bash", map[string]any{"command": "echo changed > tracked.txt && rm gone.txt && echo new > untracked-new.txt && echo log > build.log"}),
		doneTurn,
	))
	s := h.fullAccess()
	dir := s.Cwd()
	git(t, dir, "init", "-q")
	writeFile(t, filepath.Join(dir, "tracked.txt"), "tracked\n")
	writeFile(t, filepath.Join(dir, "gone.txt"), "gone\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(dir, "stashed.txt"), "s\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "init")
	writeFile(t, filepath.Join(dir, "stashed.txt"), "stash me\n")
	git(t, dir, "stash", "-q")
	writeFile(t, filepath.Join(dir, "staged.txt"), "staged\n")
	git(t, dir, "add", "staged.txt")
	writeFile(t, filepath.Join(dir, "untracked.txt"), "untracked\n")
	before := repoState(t, dir)

	h.run(s, "go")
	runs := changesOf(t, s)
	if len(runs) != 1 || !slices.Equal(filesOf(runs[0]), []string{"gone.txt:deleted", "tracked.txt:modified", "untracked-new.txt:added"}) || runs[0].BashNotCovered {
		t.Fatalf("changes: %+v", runs)
	}
	res, err := s.RestoreFiles(context.Background(), 0, false)
	if err != nil || !slices.Equal(res.Restored, []string{"gone.txt", "tracked.txt", "untracked-new.txt"}) || len(res.Conflicts) != 0 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if readFile(t, filepath.Join(dir, "tracked.txt")) != "tracked\n" || readFile(t, filepath.Join(dir, "gone.txt")) != "gone\n" ||
		readFile(t, filepath.Join(dir, "untracked-new.txt")) != "<absent>" || readFile(t, filepath.Join(dir, "build.log")) != "log\n" {
		t.Fatal("the restore did not put the working tree back")
	}
	if after := repoState(t, dir); after != before {
		t.Fatalf("the user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The snapshots live under the data root, never in the workspace.
	if _, err := os.Stat(filepath.Join(h.root, "sessions", h.ws, s.ID(), "file-checkpoints", "git", "HEAD")); err != nil {
		t.Fatalf("no private git directory: %v", err)
	}
}

func TestBashOutsideGitSaysItsChangesAreNotCovered(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("b1", "bash", map[string]any{"command": "echo x > made.txt"}),
		doneTurn,
	))
	s := h.fullAccess()
	h.run(s, "go")
	runs := changesOf(t, s)
	if len(runs) != 1 || !runs[0].BashNotCovered || len(runs[0].Files) != 0 {
		t.Fatalf("changes: %+v", runs)
	}
	var note any
	h.mu.Lock()
	for _, ev := range h.events {
		if p, ok := ev.Payload.(*engine.ToolEvent); ok && p.Event == "end" {
			note = p.Details["checkpoint"]
		}
	}
	h.mu.Unlock()
	if n, _ := note.(string); !strings.Contains(n, "not in a git repository") {
		t.Fatalf("the bash call's details say %v", note)
	}
}

func TestRestoreFilesRefusesBadInputAndChangesNothing(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "by loop\n"}),
		doneTurn,
	))
	s := h.fullAccess()
	h.run(s, "go")
	if _, err := s.RestoreFiles(context.Background(), 99, false); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("count out of range: %v", err)
	}
	if _, err := s.RestoreFiles(context.Background(), -1, false); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("negative count: %v", err)
	}
	cwd := s.Cwd()
	if os.Geteuid() != 0 {
		if err := os.Chmod(cwd, 0o500); err != nil {
			t.Fatal(err)
		}
		_, err := s.RestoreFiles(context.Background(), 0, false)
		os.Chmod(cwd, 0o700)
		if engine.CodeOf(err) != engine.CodeStorageError || !strings.Contains(err.Error(), "cannot be written") {
			t.Fatalf("read-only workspace: %v", err)
		}
		if readFile(t, filepath.Join(cwd, "a.txt")) != "by loop\n" {
			t.Fatal("a refused restore changed a file")
		}
	}
	moved := cwd + "-moved"
	if err := os.Rename(cwd, moved); err != nil {
		t.Fatal(err)
	}
	_, err := s.RestoreFiles(context.Background(), 0, false)
	if engine.CodeOf(err) != engine.CodeStorageError || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("workspace gone: %v", err)
	}
	if _, err := os.Stat(cwd); !os.IsNotExist(err) {
		t.Fatal("a refused restore made the workspace again")
	}
	if err := os.Rename(moved, cwd); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(cwd, "a.txt")) != "by loop\n" {
		t.Fatal("a refused restore changed a file")
	}
}

func TestNoToolChangesAFileWhoseCheckpointCannotBeRecorded(t *testing.T) {
	h := newHarness(t, turns(
		doneTurn,
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "by loop\n"}),
		doneTurn,
	))
	s := h.fullAccess()
	writeFile(t, filepath.Join(s.Cwd(), "a.txt"), "original\n")
	// The session exists on disk once its first run starts; make its
	// file-checkpoints directory a file, so no checkpoint can be written.
	res, err := s.Prompt(engine.PromptInput{RequestID: "r0", Text: "warm up"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	dir := filepath.Join(h.root, "sessions", h.ws, s.ID(), "file-checkpoints")
	os.RemoveAll(dir)
	writeFile(t, dir, "not a directory")
	res, err = s.Prompt(engine.PromptInput{RequestID: "r1", Text: "write"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	if got := readFile(t, filepath.Join(s.Cwd(), "a.txt")); got != "original\n" {
		t.Fatalf("the tool changed the file without a checkpoint: %q", got)
	}
	st := s.Snapshot().State
	var found bool
	for _, m := range st.Messages {
		if m.IsError && strings.Contains(m.Text(), "file checkpoint") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error result says why: %+v", st.Messages)
	}
}

func TestCheckpointsPastTheirBoundDropTheOldestRuns(t *testing.T) {
	big := strings.Repeat("x", 6000)
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "1" + big}), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "a.txt", "content": "2" + big}), doneTurn,
		callTurn("w3", "write", map[string]any{"path": "a.txt", "content": "3" + big}), doneTurn,
	))
	boundCheckpoints(t, h, 10000)
	s := h.fullAccess()
	writeFile(t, filepath.Join(s.Cwd(), "a.txt"), "0"+big)
	h.run(s, "one")
	h.run(s, "two")
	h.run(s, "three")
	runs := changesOf(t, s)
	if len(runs) == 0 || len(runs) == 3 {
		t.Fatalf("runs kept: %+v", runs)
	}
	if _, err := s.RestoreFiles(context.Background(), 0, false); engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("restore past the dropped runs: %v", err)
	}
	last := runs[len(runs)-1]
	res, err := s.RestoreFiles(context.Background(), last.MessageStartIndex, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt"}) || readFile(t, filepath.Join(s.Cwd(), "a.txt")) != "2"+big {
		t.Fatalf("restore of the newest run: %+v %v", res, err)
	}
}

func TestARunACrashCutIsResolvedAgainstTheWorkspace(t *testing.T) {
	h := newHarness(t, turns(doneTurn))
	s := h.fullAccess()
	h.run(s, "first")
	id, cwd := s.ID(), s.Cwd()
	// The run the crash cut is a run of the history (the journal commits
	// a cut run on the next open, docs/storage.md); here the first run,
	// whose end the checkpoint log never got.
	crashed := s.Snapshot().State.PromptTimings[0].ID
	n := 0
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}
	// A process recorded a pre-image and died before the run's end: the
	// file's first state is in the log, the tool's change on disk.
	writeFile(t, filepath.Join(cwd, "a.txt"), "before\n")
	st := h.openStored(id)
	pre := store.FileState{Exists: true, Mode: store.ModeFile, ID: gitBlobID("before\n")}
	if _, err := st.FileCheckpoints().PreImage(crashed, n, "a.txt", pre, []byte("before\n")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	writeFile(t, filepath.Join(cwd, "a.txt"), "after\n")
	h.start()
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	runs := changesOf(t, s)
	if len(runs) != 1 || runs[0].RunID != crashed || !slices.Equal(filesOf(runs[0]), []string{"a.txt:modified"}) {
		t.Fatalf("changes: %+v", runs)
	}
	res, err := s.RestoreFiles(context.Background(), n, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt"}) || readFile(t, filepath.Join(cwd, "a.txt")) != "before\n" {
		t.Fatalf("restore: %+v %v", res, err)
	}
}

// gitBlobID is git's blob id of content (SHA-1).
func gitBlobID(content string) string {
	return gitsnap.BlobID("sha1", []byte(content))
}

func TestRestoreFilesAndChangesAreRefusedWhileAnApprovalWaits(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "x\n"}),
		doneTurn,
	))
	asked := make(chan struct{})
	answer := make(chan string)
	h.e.SetApprover(approverFunc(func(ctx context.Context, _ engine.ApprovalRequest) (string, error) {
		close(asked)
		return <-answer, nil
	}))
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{Permission: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "write"})
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	if _, err := s.RestoreFiles(context.Background(), 0, false); engine.CodeOf(err) != engine.CodeApprovalPending {
		t.Fatalf("restore while an approval waits: %v", err)
	}
	if _, err := s.Changes(context.Background()); engine.CodeOf(err) != engine.CodeApprovalPending {
		t.Fatalf("changes while an approval waits: %v", err)
	}
	answer <- engine.DecisionAllowedOnce
	h.settled(res.RunID)
	if runs := changesOf(t, s); len(runs) != 1 || !slices.Equal(filesOf(runs[0]), []string{"a.txt:added"}) {
		t.Fatalf("changes: %+v", runs)
	}
}

func TestRestoreFilesPutsAFileBackWhereARunMadeADirectory(t *testing.T) {
	needGit(t)
	h := newHarness(t, turns(
		callTurn("b1", "bash", map[string]any{"command": "rm a && mkdir -p a/b && echo x > a/b/x && ln -s target link2"}),
		doneTurn,
	))
	s := h.fullAccess()
	dir := s.Cwd()
	git(t, dir, "init", "-q")
	writeFile(t, filepath.Join(dir, "a"), "was a file\n")
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "init")
	h.run(s, "go")
	res, err := s.RestoreFiles(context.Background(), 0, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a", "a/b/x", "link2"}) {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if readFile(t, filepath.Join(dir, "a")) != "was a file\n" {
		t.Fatal("a is not the file it was")
	}
	if _, err := os.Lstat(filepath.Join(dir, "link2")); !os.IsNotExist(err) {
		t.Fatalf("the run's symbolic link stayed: %v", err)
	}
}

// A rewind with files puts the workspace back to its state at that point
// and cuts the history, under one command; a file changed outside Loop
// since its checkpoint refuses both (files_conflict), and nothing changes.
func TestRewindWithFilesPutsTheFilesBackOrChangesNothing(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "first run\n"}),
		doneTurn,
		callTurn("w2", "write", map[string]any{"path": "a.txt", "content": "second run\n"}),
		callTurn("w3", "write", map[string]any{"path": "b.txt", "content": "second run\n"}),
		doneTurn,
	))
	s := h.fullAccess()
	a, b := filepath.Join(s.Cwd(), "a.txt"), filepath.Join(s.Cwd(), "b.txt")
	h.run(s, "first")
	h.run(s, "second")
	runs := changesOf(t, s)
	if len(runs) != 2 {
		t.Fatalf("changes: %+v", runs)
	}
	at := runs[1].MessageStartIndex
	before := s.Snapshot().State.MessageCount

	writeFile(t, b, "the user's\n")
	_, _, err := s.Rewind(context.Background(), at, true)
	if engine.CodeOf(err) != engine.CodeFilesConflict || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("rewind over a conflict: %v, want files_conflict naming b.txt", err)
	}
	var conflict *engine.FilesConflictError
	if !errors.As(err, &conflict) || !slices.Equal(conflict.Paths, []string{"b.txt"}) {
		t.Fatalf("the conflict's files: %+v, want [b.txt]", conflict)
	}
	if n := s.Snapshot().State.MessageCount; n != before || readFile(t, a) != "second run\n" || readFile(t, b) != "the user's\n" {
		t.Fatalf("a refused rewind changed things: %d messages, a %q, b %q", n, readFile(t, a), readFile(t, b))
	}

	writeFile(t, b, "second run\n")
	snap, forkID, err := s.Rewind(context.Background(), at, true)
	if err != nil || forkID == "" {
		t.Fatalf("rewind with files: %v", err)
	}
	if snap.State.MessageCount != at || readFile(t, a) != "first run\n" || readFile(t, b) != "<absent>" {
		t.Fatalf("rewound to %d messages, a %q, b %q", snap.State.MessageCount, readFile(t, a), readFile(t, b))
	}
}

// After a rewind, new runs start at the message indexes of the runs it
// dropped; a restore to one of them puts back the state before the new
// run, never before the dropped one, and session/changes lists only the
// session's runs.
func TestRestoreFilesAfterARewindUsesTheRunsOfTheHistoryNotTheDroppedOnes(t *testing.T) {
	w := func(id, c string) string {
		return callTurn(id, "write", map[string]any{"path": "a.txt", "content": c})
	}
	h := newHarness(t, turns(w("w1", "1"), doneTurn, w("w2", "2"), doneTurn, w("w3", "3"), doneTurn, w("w4", "4"), doneTurn, w("w5", "5"), doneTurn))
	s := h.fullAccess()
	a := filepath.Join(s.Cwd(), "a.txt")
	h.run(s, "r1")
	h.run(s, "r2")
	h.run(s, "r3")
	if _, _, err := s.Rewind(context.Background(), changesOf(t, s)[1].MessageStartIndex, true); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a); got != "1" {
		t.Fatalf("a.txt after the rewind: %q", got)
	}
	h.run(s, "r4")
	h.run(s, "r5")
	runs := changesOf(t, s)
	if len(runs) != 3 {
		t.Fatalf("changes list %d runs, want the session's 3: %+v", len(runs), runs)
	}
	if _, err := s.RestoreFiles(context.Background(), runs[2].MessageStartIndex, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a); got != "4" {
		t.Fatalf("a.txt restored to before the last run: %q, want \"4\"", got)
	}
}

func TestARewoundAwayRunDroppedForSizeDoesNotRefuseRestoresOfTheHistory(t *testing.T) {
	big := strings.Repeat("x", 6000)
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "1" + big}), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "a.txt", "content": "2" + big}), doneTurn,
		callTurn("w3", "write", map[string]any{"path": "a.txt", "content": "3" + big}), doneTurn,
		callTurn("w4", "write", map[string]any{"path": "a.txt", "content": "4" + big}), doneTurn,
	))
	boundCheckpoints(t, h, 10000)
	s := h.fullAccess()
	a := filepath.Join(s.Cwd(), "a.txt")
	writeFile(t, a, "0"+big)
	h.run(s, "one")
	h.run(s, "two")
	second := s.Snapshot().State.MessageCount
	h.run(s, "three")
	// The third run goes, its change to a.txt stays; the next run starts
	// where it did, and its pre-image pushes the third run's out of the
	// log (the oldest left): a run no longer of the history.
	if _, _, err := s.Rewind(context.Background(), second, false); err != nil {
		t.Fatal(err)
	}
	h.run(s, "four")
	if got := readFile(t, a); got != "4"+big {
		t.Fatalf("a.txt after the fourth run: %.10q", got)
	}
	res, err := s.RestoreFiles(context.Background(), second, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt"}) {
		t.Fatalf("restore to before the fourth run: %+v %v", res, err)
	}
	if got := readFile(t, a); got != "3"+big {
		t.Fatalf("a.txt restored to before the fourth run: %.10q, want the third run's", got)
	}
	// The second run's checkpoints were dropped while it was of the
	// history: restoring to before it is refused.
	if _, err := s.RestoreFiles(context.Background(), 0, false); engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("restore past a dropped run of the history: %v", err)
	}
}

func TestADroppedRecordThatNamesNoRunsStillRefusesRestoresBelowItsStart(t *testing.T) {
	h := newHarness(t, turns(callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "1\n"}), doneTurn))
	s := h.fullAccess()
	h.run(s, "one")
	id := s.ID()
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}
	// A log written before dropped records named their runs: only the
	// floor, start 0, which the run kept in the log starts at.
	st := h.openStored(id)
	ck := st.FileCheckpoints()
	recs, err := ck.Records()
	if err != nil {
		t.Fatal(err)
	}
	if err := ck.Rewrite(recs, 0, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	h.start()
	if s, err = h.e.Session(id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RestoreFiles(context.Background(), 0, false); engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("restore to the floor of a dropped record without runs: %v", err)
	}
}

// boundCheckpoints sets config.json's checkpoints.maxBytes to n and
// reloads it.
func boundCheckpoints(t *testing.T, h *harness, n int) {
	t.Helper()
	cfg := fmt.Sprintf(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}},"checkpoints":{"maxBytes":%d}}`, n)
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// openStored opens the stored session id of the harness's workspace
// through the store, as a next process finds it, while no engine holds
// it.
func (h *harness) openStored(id string) *store.Session {
	h.t.Helper()
	root, err := store.OpenRoot(h.root)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := root.OpenDir(filepath.Join(h.root, "sessions", h.ws, id))
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}
