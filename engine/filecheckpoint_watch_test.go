package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
)

// snapshotTrees are the trees of a session's bash snapshot records, in
// the order written (docs/storage.md, "File checkpoints").
func snapshotTrees(t *testing.T, h *harness, s *engine.Session) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(h.root, "sessions", h.ws, s.ID(), "file-checkpoints", "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var trees []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct{ Type, Tree string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Type == "snapshot" {
			trees = append(trees, rec.Tree)
		}
	}
	return trees
}

// A run whose bash changed nothing ends on the tree it started from (the
// session's watcher vouches for it without git), records no change, and
// the next run's snapshot is that same tree; a restore to either run's
// start still puts back what the next run's bash changed.
func TestARunWhoseBashChangedNothingEndsOnTheTreeItStartedFrom(t *testing.T) {
	needGit(t)
	h := newHarness(t, turns(
		callTurn("b1", "bash", map[string]any{"command": "cat a.txt > /dev/null"}),
		doneTurn,
		callTurn("b2", "bash", map[string]any{"command": "echo two > a.txt && mkdir -p new/dir && echo n > new/dir/n.txt"}),
		doneTurn,
	))
	s := h.fullAccess()
	dir := s.Cwd()
	git(t, dir, "init", "-q")
	writeFile(t, filepath.Join(dir, "a.txt"), "one\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "init")

	h.run(s, "look")
	for _, rc := range changesOf(t, s) {
		if len(rc.Files) != 0 {
			t.Fatalf("a run that changed nothing recorded changes: %+v", rc)
		}
	}
	h.run(s, "change")
	trees := snapshotTrees(t, h, s)
	if len(trees) != 2 || trees[0] != trees[1] {
		t.Fatalf("snapshot trees: %v, want two equal ones", trees)
	}
	runs := changesOf(t, s)
	last := runs[len(runs)-1]
	if !slices.Equal(filesOf(last), []string{"a.txt:modified", "new/dir/n.txt:added"}) {
		t.Fatalf("changes of the second run: %+v", runs)
	}
	for _, at := range []int{last.MessageStartIndex, 0} {
		res, err := s.RestoreFiles(context.Background(), at, false)
		if err != nil {
			t.Fatalf("restore to %d: %v", at, err)
		}
		if readFile(t, filepath.Join(dir, "a.txt")) != "one\n" || readFile(t, filepath.Join(dir, "new", "dir", "n.txt")) != "<absent>" {
			t.Fatalf("restore to %d (%+v) did not put the files back", at, res)
		}
	}
	if strings.Contains(git(t, dir, "status", "--porcelain"), "a.txt") {
		t.Fatal("a.txt differs from the commit after the restore")
	}
}
