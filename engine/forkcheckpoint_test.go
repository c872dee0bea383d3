package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// bashTurn is a scripted turn that runs one bash command.
func bashTurn(id, command string) string {
	return callTurn(id, "bash", map[string]any{"command": command})
}

// gitWorkspace makes the session's working directory a git repository
// holding files (path -> content), committed.
func gitWorkspace(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	git(t, dir, "init", "-q")
	for p, c := range files {
		writeFile(t, filepath.Join(dir, p), c)
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "init")
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A fork's history starts with its parent's, and so do the runs that made
// it: restoring the fork to a point of that part uses the parent's
// checkpoints (write and edit pre-images in its log, bash snapshots in its
// git directory), and session/changes on the fork lists those runs.
func TestAForkRestoresTheFilesOfThePartItSharesWithItsParent(t *testing.T) {
	needGit(t)
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "first\n"}), doneTurn,
		callTurn("e1", "edit", map[string]any{"path": "a.txt", "oldText": "first", "newText": "second"}), doneTurn,
		bashTurn("b1", "echo bash > b.txt && rm tracked.txt"), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "c.txt", "content": "the fork's own\n"}), doneTurn,
	))
	s := h.fullAccess()
	dir := s.Cwd()
	gitWorkspace(t, dir, map[string]string{"tracked.txt": "tracked\n"})
	h.run(s, "one")
	h.run(s, "two")
	h.run(s, "three")
	parentRuns := changesOf(t, s)
	if len(parentRuns) != 3 {
		t.Fatalf("parent's changes: %+v", parentRuns)
	}
	f, err := s.Fork(s.Snapshot().State.MessageCount, "")
	if err != nil {
		t.Fatal(err)
	}
	h.run(f, "four")
	runs := changesOf(t, f)
	if len(runs) != 4 || runs[0].RunID != parentRuns[0].RunID || runs[2].MessageStartIndex != parentRuns[2].MessageStartIndex ||
		!slices.Equal(filesOf(runs[2]), []string{"b.txt:added", "tracked.txt:deleted"}) || !slices.Equal(filesOf(runs[3]), []string{"c.txt:added"}) {
		t.Fatalf("the fork's changes: %+v", runs)
	}
	// Back to before the parent's bash run: its snapshot is in the
	// parent's git directory.
	res, err := f.RestoreFiles(context.Background(), runs[2].MessageStartIndex, false)
	if err != nil || !slices.Equal(res.Restored, []string{"b.txt", "c.txt", "tracked.txt"}) || len(res.Conflicts) != 0 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if readFile(t, filepath.Join(dir, "b.txt")) != "<absent>" || readFile(t, filepath.Join(dir, "tracked.txt")) != "tracked\n" || readFile(t, filepath.Join(dir, "a.txt")) != "second\n" {
		t.Fatal("the fork's restore did not put back the parent's bash run")
	}
	// Back to before the edit, then the start: the parent's pre-images.
	if _, err := f.RestoreFiles(context.Background(), runs[1].MessageStartIndex, false); err != nil || readFile(t, filepath.Join(dir, "a.txt")) != "first\n" {
		t.Fatalf("restore before the edit: %v, a.txt %q", err, readFile(t, filepath.Join(dir, "a.txt")))
	}
	if _, err := f.RestoreFiles(context.Background(), 0, false); err != nil || readFile(t, filepath.Join(dir, "a.txt")) != "<absent>" {
		t.Fatalf("restore to the start: %v, a.txt %q", err, readFile(t, filepath.Join(dir, "a.txt")))
	}
}

// A fork of a fork reads its grandparent's checkpoints as well.
func TestAForkOfAForkRestoresTheFilesOfItsGrandparentsRuns(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "grandparent\n"}), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "a.txt", "content": "parent\n"}), doneTurn,
	))
	s := h.fullAccess()
	a := filepath.Join(s.Cwd(), "a.txt")
	writeFile(t, a, "before\n")
	h.run(s, "one")
	f1, err := s.Fork(s.Snapshot().State.MessageCount, "")
	if err != nil {
		t.Fatal(err)
	}
	h.run(f1, "two")
	f2, err := f1.Fork(f1.Snapshot().State.MessageCount, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := changesOf(t, f2)
	if len(runs) != 2 {
		t.Fatalf("the fork of a fork's changes: %+v", runs)
	}
	if _, err := f2.RestoreFiles(context.Background(), runs[1].MessageStartIndex, false); err != nil || readFile(t, a) != "grandparent\n" {
		t.Fatalf("restore before the parent's run: %v, a.txt %q", err, readFile(t, a))
	}
	if _, err := f2.RestoreFiles(context.Background(), 0, false); err != nil || readFile(t, a) != "before\n" {
		t.Fatalf("restore before the grandparent's run: %v, a.txt %q", err, readFile(t, a))
	}
}

// Deleting a fork's parent deletes its checkpoints: the fork's restores
// below the parent's runs are refused as dropped, and change nothing; its
// own runs restore as before.
func TestAForkWhoseParentWasDeletedRefusesRestoresBelowTheParentsRuns(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "parent\n"}), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "b.txt", "content": "fork\n"}), doneTurn,
	))
	s := h.fullAccess()
	a, b := filepath.Join(s.Cwd(), "a.txt"), filepath.Join(s.Cwd(), "b.txt")
	writeFile(t, a, "before\n")
	h.run(s, "one")
	f, err := s.Fork(s.Snapshot().State.MessageCount, "")
	if err != nil {
		t.Fatal(err)
	}
	h.run(f, "two")
	fr := changesOf(t, f)
	if len(fr) != 2 {
		t.Fatalf("the fork's changes: %+v", fr)
	}
	own := fr[1].MessageStartIndex
	if err := h.e.Delete(context.Background(), h.ws, s.ID()); err != nil {
		t.Fatal(err)
	}
	_, err = f.RestoreFiles(context.Background(), 0, false)
	if engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("restore below the deleted parent's run: %v, want invalid_params saying dropped", err)
	}
	if readFile(t, a) != "parent\n" || readFile(t, b) != "fork\n" {
		t.Fatal("a refused restore changed files")
	}
	if res, err := f.RestoreFiles(context.Background(), own, false); err != nil || !slices.Equal(res.Restored, []string{"b.txt"}) || readFile(t, b) != "<absent>" {
		t.Fatalf("restore of the fork's own run: %+v %v", res, err)
	}
}

// A rewind with files keeps what its restore overwrites, as a restore at
// the end of the fork it makes of what it drops: session/restore_files on
// that fork at its length puts every file back as the dropped runs left
// it (content, mode, files they made and files they deleted), refusing
// files changed since the rewind unless forced; restores to earlier points
// of the fork use the dropped runs' own checkpoints.
func TestRestoreFilesOnTheForkOfARewindUndoesTheRewindsFiles(t *testing.T) {
	needGit(t)
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "first run\n"}), doneTurn,
		callTurn("w2", "write", map[string]any{"path": "a.txt", "content": "dropped run\n"}),
		bashTurn("b1", "echo made > new.txt && rm gone.txt && chmod +x tool.sh"), doneTurn,
	))
	s := h.fullAccess()
	dir := s.Cwd()
	gitWorkspace(t, dir, map[string]string{"gone.txt": "gone\n", "tool.sh": "#!/bin/sh\n"})
	a, made, gone, tool := filepath.Join(dir, "a.txt"), filepath.Join(dir, "new.txt"), filepath.Join(dir, "gone.txt"), filepath.Join(dir, "tool.sh")
	h.run(s, "one")
	h.run(s, "two")
	runs := changesOf(t, s)
	n := s.Snapshot().State.MessageCount
	_, forkID, err := s.Rewind(context.Background(), runs[1].MessageStartIndex, true)
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, a) != "first run\n" || readFile(t, made) != "<absent>" || readFile(t, gone) != "gone\n" || modeOf(t, tool) != 0o644 {
		t.Fatal("the rewind did not put the files back")
	}
	f, err := h.e.Session(forkID)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Snapshot().State.MessageCount; got != n {
		t.Fatalf("the fork holds %d messages, want %d", got, n)
	}
	// A file changed since the rewind is a conflict, and nothing changes.
	writeFile(t, a, "the user's\n")
	res, err := f.RestoreFiles(context.Background(), n, false)
	if err != nil || len(res.Restored) != 0 || !slices.Equal(res.Conflicts, []string{"a.txt"}) {
		t.Fatalf("undo over a conflict: %+v %v", res, err)
	}
	if readFile(t, made) != "<absent>" || readFile(t, gone) != "gone\n" {
		t.Fatal("a refused undo changed files")
	}
	writeFile(t, a, "first run\n")
	res, err = f.RestoreFiles(context.Background(), n, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt", "gone.txt", "new.txt", "tool.sh"}) || len(res.Conflicts) != 0 {
		t.Fatalf("undo: %+v %v", res, err)
	}
	if readFile(t, a) != "dropped run\n" || readFile(t, made) != "made\n" || readFile(t, gone) != "<absent>" || modeOf(t, tool) != 0o755 {
		t.Fatalf("the undo left a.txt %q, new.txt %q, gone.txt %q, tool.sh %v", readFile(t, a), readFile(t, made), readFile(t, gone), modeOf(t, tool))
	}
	// The fork's history is the dropped runs': restoring it to before the
	// dropped run uses that run's checkpoints.
	if fr := changesOf(t, f); len(fr) != 2 || fr[1].RunID != runs[1].RunID {
		t.Fatalf("the fork's changes: %+v", fr)
	}
	if _, err := f.RestoreFiles(context.Background(), runs[1].MessageStartIndex, false); err != nil || readFile(t, a) != "first run\n" || readFile(t, gone) != "gone\n" {
		t.Fatalf("restore before the dropped run: %v", err)
	}
	// The session the rewind cut does not see the restore: its history
	// no longer reaches that point.
	if _, err := s.RestoreFiles(context.Background(), s.Snapshot().State.MessageCount, false); err != nil || readFile(t, a) != "first run\n" {
		t.Fatalf("restore of the rewound session at its end: %v, a.txt %q", err, readFile(t, a))
	}
}

// A crash after a restore kept what it overwrites and before it recorded
// its end (or before the rewind that made it cut the history) leaves that
// content recoverable: the session still holds the history the restore
// was made at, and a restore to that point puts the files back.
func TestARestoreACrashCutLeavesWhatItOverwroteRecoverable(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "the run's\n"}), doneTurn,
	))
	s := h.fullAccess()
	h.run(s, "one")
	id, cwd := s.ID(), s.Cwd()
	a := filepath.Join(cwd, "a.txt")
	n := s.Snapshot().State.MessageCount
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}
	// The restore kept a.txt's content, then removed it (the run made it),
	// and the process died.
	st := h.openStored(id)
	crc, err := st.MessagesCRCAt(n)
	if err != nil {
		t.Fatal(err)
	}
	pre := store.FileState{Exists: true, Mode: store.ModeFile, ID: gitBlobID("the run's\n")}
	if _, err := st.FileCheckpoints().RestorePreImage("restore-1", n, crc, "a.txt", pre, []byte("the run's\n")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	os.Remove(a)
	h.start()
	s, err = h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.RestoreFiles(context.Background(), n, false)
	if err != nil || !slices.Equal(res.Restored, []string{"a.txt"}) || readFile(t, a) != "the run's\n" {
		t.Fatalf("restore to where the crashed restore was made: %+v %v, a.txt %q", res, err, readFile(t, a))
	}
}

// A fork made in the middle of a run holds the run up to its point: the
// run's changes are listed ending there, as its prompt timing does, and a
// restore to the run's start puts its files back.
func TestAForkInTheMiddleOfARunListsItEndingAtTheForkPoint(t *testing.T) {
	h := newHarness(t, turns(
		callTurn("w1", "write", map[string]any{"path": "a.txt", "content": "run\n"}), doneTurn,
	))
	s := h.fullAccess()
	a := filepath.Join(s.Cwd(), "a.txt")
	h.run(s, "one")
	// user, assistant (the call), tool result, assistant: cut before the
	// last.
	f, err := s.Fork(3, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := changesOf(t, f)
	if len(runs) != 1 || runs[0].MessageStartIndex != 0 || runs[0].MessageEndIndex != 3 || !slices.Equal(filesOf(runs[0]), []string{"a.txt:added"}) {
		t.Fatalf("the fork's changes: %+v", runs)
	}
	if _, err := f.RestoreFiles(context.Background(), 0, false); err != nil || readFile(t, a) != "<absent>" {
		t.Fatalf("restore: %v, a.txt %q", err, readFile(t, a))
	}
}

// When the parent drops its oldest runs' checkpoints to stay within
// checkpoints.maxBytes, a fork's restores below the runs it shares that
// were dropped are refused, and the fork's own runs still restore.
func TestAForkRestoresItsOwnRunsWhenItsParentDroppedTheSharedOnes(t *testing.T) {
	big := strings.Repeat("x", 6000)
	w := func(id, path, content string) string {
		return callTurn(id, "write", map[string]any{"path": path, "content": content})
	}
	h := newHarness(t, turns(
		w("w1", "a.txt", "1"+big), doneTurn,
		w("wf", "b.txt", "fork\n"), doneTurn,
		w("w2", "a.txt", "2"+big), doneTurn,
		w("w3", "a.txt", "3"+big), doneTurn,
	))
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}},"checkpoints":{"maxBytes":10000}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := h.fullAccess()
	b := filepath.Join(s.Cwd(), "b.txt")
	writeFile(t, filepath.Join(s.Cwd(), "a.txt"), "0"+big)
	h.run(s, "one")
	f, err := s.Fork(s.Snapshot().State.MessageCount, "")
	if err != nil {
		t.Fatal(err)
	}
	h.run(f, "fork's")
	h.run(s, "two")
	h.run(s, "three")
	if runs := changesOf(t, s); len(runs) == 3 {
		t.Fatalf("the parent dropped nothing: %+v", runs)
	}
	fr := changesOf(t, f)
	if len(fr) != 1 || !slices.Equal(filesOf(fr[0]), []string{"b.txt:added"}) {
		t.Fatalf("the fork's changes: %+v", fr)
	}
	if _, err := f.RestoreFiles(context.Background(), 0, false); engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("restore below the parent's dropped run: %v", err)
	}
	if res, err := f.RestoreFiles(context.Background(), fr[0].MessageStartIndex, false); err != nil || !slices.Equal(res.Restored, []string{"b.txt"}) || readFile(t, b) != "<absent>" {
		t.Fatalf("restore of the fork's own run: %+v %v", res, err)
	}
}

// A rewind's restore that the rewound session later drops to stay within
// checkpoints.maxBytes is known to be gone: restoring the rewind's fork to
// its length is refused as dropped, never answered with nothing restored.
func TestUndoingARewindWhoseRestoreWasDroppedIsRefused(t *testing.T) {
	big := strings.Repeat("x", 6000)
	w := func(id, content string) string {
		return callTurn(id, "write", map[string]any{"path": "a.txt", "content": content})
	}
	h := newHarness(t, turns(w("w1", "1"+big), doneTurn, w("w2", "2"+big), doneTurn, w("w3", "3"+big), doneTurn))
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}},"checkpoints":{"maxBytes":10000}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := h.fullAccess()
	writeFile(t, filepath.Join(s.Cwd(), "a.txt"), "0"+big)
	h.run(s, "one")
	h.run(s, "two")
	n := s.Snapshot().State.MessageCount
	_, forkID, err := s.Rewind(context.Background(), 4, true)
	if err != nil {
		t.Fatal(err)
	}
	h.run(s, "three")
	f, err := h.e.Session(forkID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.RestoreFiles(context.Background(), n, false); engine.CodeOf(err) != engine.CodeInvalidParams || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("undo of a rewind whose restore was dropped: %v, want invalid_params saying dropped", err)
	}
}
