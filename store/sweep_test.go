package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
	"github.com/loopdev/loop/store/internal/summary"
)

// age sets path's times back past LeftoverAge, as the leftovers of a crash
// found by a later process are.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-2 * LeftoverAge)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func writeLeftover(t *testing.T, path string, aged bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if aged {
		age(t, path)
	}
}

// What a writer killed mid-write leaves (a session half created, a
// tombstone half removed, the temporary files of atomic writes and index
// rebuilds) is removed by the sweep; sessions, indexes and settings stay.
func TestSweepRemovesTheLeftoversOfACrash(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(2), nil, nil)
	s.Close()
	if _, err := r.List("", ListOptions{}); err != nil { // builds .summaries
		t.Fatal(err)
	}
	scope := filepath.Join(r.sessionsDir(), globalScope)
	// The search index a search builds (store/search).
	for _, name := range []string{searchIndexName, searchToolsName} {
		writeLeftover(t, filepath.Join(scope, searchDirName, name), false)
	}
	before := names(t, scope)
	tmpDir := filepath.Join(scope, ".tmp-"+newID()+"-0123456789abcdef")
	writeLeftover(t, filepath.Join(tmpDir, messagesFile), false)
	age(t, tmpDir)
	tomb := filepath.Join(scope, ".deleted-"+newID()+"-0123456789abcdef")
	writeLeftover(t, filepath.Join(tomb, headerFile), false) // no age needed
	for _, p := range []string{
		filepath.Join(scope, summary.FileName+".tmp-12345"),
		filepath.Join(scope, "loop-recovery-"+s.ID()+"-1.json.tmp-77"),
		filepath.Join(scope, searchDirName, searchIndexName+".tmp-4242"),
		filepath.Join(scope, searchDirName, searchToolsName+".tmp-4243"),
		filepath.Join(r.Dir(), "preferences.json.tmp-9"),
	} {
		writeLeftover(t, p, true)
	}
	rootBefore := slices.DeleteFunc(names(t, r.Dir()), func(n string) bool { return strings.Contains(n, ".tmp-") })
	n, err := r.SweepLeftovers(context.Background())
	if err != nil || n != 7 {
		t.Fatalf("SweepLeftovers = %d, %v; want 7 removed", n, err)
	}
	if got := names(t, scope); !slices.Equal(got, before) {
		t.Errorf("scope holds %v, want %v", got, before)
	}
	if got := names(t, filepath.Join(scope, searchDirName)); !slices.Equal(got, []string{searchIndexName, searchToolsName}) {
		t.Errorf("search index holds %v", got)
	}
	if got := names(t, r.Dir()); !slices.Equal(got, rootBefore) {
		t.Errorf("root holds %v, want %v", got, rootBefore)
	}
	if sums, err := r.List("", ListOptions{}); err != nil || len(sums) != 1 {
		t.Fatalf("List = %v, %v", sums, err)
	}
}

// A temporary file or directory that a writer of this process may be
// writing right now stays: its flock is held, or it is too young to tell
// from one whose writer has yet to lock it.
func TestSweepLeavesWhatIsBeingWritten(t *testing.T) {
	r, ffs := newTestRoot(t)
	scope := filepath.Join(r.sessionsDir(), globalScope)
	// A creation stopped while it writes its temporary directory.
	atHeader := make(chan struct{})
	release := make(chan struct{})
	ffs.Arm(func(op, p string) *storetest.Fault {
		if op == "open" && strings.Contains(p, ".tmp-") && strings.HasSuffix(p, headerFile) {
			age(t, filepath.Dir(p))
			close(atHeader)
			<-release
		}
		return nil
	})
	cwd := t.TempDir()
	done := make(chan error)
	var s *Session
	go func() {
		var err error
		s, err = r.Create("", cwd)
		done <- err
	}()
	<-atHeader
	// A tombstone whose deleter still removes it, the search index's
	// temporary file while a rebuild holds its lock, a session directory
	// made a moment ago and not yet locked, fresh atomic-write temps.
	tomb := filepath.Join(scope, ".deleted-"+newID()+"-0123456789abcdef")
	writeLeftover(t, filepath.Join(tomb, headerFile), false)
	tombLock, err := fsys.OS{}.Lock(tomb)
	if err != nil {
		t.Fatal(err)
	}
	searchTmp := filepath.Join(scope, searchDirName, searchIndexName+".tmp-1")
	writeLeftover(t, searchTmp, true)
	searchLock, err := fsys.OS{}.Lock(filepath.Dir(searchTmp))
	if err != nil {
		t.Fatal(err)
	}
	young := filepath.Join(scope, ".tmp-"+newID()+"-fedcba9876543210")
	if err := os.Mkdir(young, 0o700); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(scope, summary.FileName+".tmp-5")
	writeLeftover(t, fresh, false)
	rootFresh := filepath.Join(r.Dir(), "preferences.json.tmp-6")
	writeLeftover(t, rootFresh, false)
	// The sweep goes through the real file system: the commit's hook
	// holds the fault file system's lock.
	other, err := OpenRoot(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	n, err := other.SweepLeftovers(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("SweepLeftovers = %d, %v; want nothing removed", n, err)
	}
	for _, p := range []string{tomb, searchTmp, young, fresh, rootFresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the creation the sweep met: %v", err)
	}
	s.Close()
	tombLock.Close()
	searchLock.Close()
	if n, err := other.SweepLeftovers(context.Background()); err != nil || n != 2 {
		t.Fatalf("SweepLeftovers = %d, %v; want the tombstone and the search temp, now unlocked", n, err)
	}
}

// runSweepStallChild leaves a creation stopped in its temporary
// directory and a delete stopped in its tombstone, both locked, prints
// their paths and waits to be killed.
func runSweepStallChild(root *Root) int {
	cwd := os.Getenv("LOOP_STORE_CWD")
	stall := func(match func(op, p string) bool, at chan<- string) *Root {
		r, _ := OpenRoot(root.Dir())
		ffs := &storetest.FaultFS{FS: fsys.OS{}}
		r.fs = ffs
		ffs.Arm(func(op, p string) *storetest.Fault {
			if match(op, p) {
				at <- p
				select {}
			}
			return nil
		})
		return r
	}
	created := make(chan string)
	rc := stall(func(op, p string) bool {
		return op == "open" && strings.Contains(p, ".tmp-") && strings.HasSuffix(p, headerFile)
	}, created)
	victim, err := root.Create("", cwd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error", err)
		return 1
	}
	victim.Close()
	deleted := make(chan string)
	rd := stall(func(op, p string) bool { return op == "remove" && strings.Contains(p, ".deleted-") }, deleted)
	go func() {
		_, err := rc.Create("", cwd)
		fmt.Fprintln(os.Stderr, "error", err)
	}()
	go func() {
		s, err := rd.Open("", victim.ID())
		if err == nil {
			err = s.Delete()
		}
		fmt.Fprintln(os.Stderr, "error", err)
	}()
	os.Stdout.WriteString("tmp " + filepath.Dir(<-created) + "\n")
	os.Stdout.WriteString("tomb " + <-deleted + "\n")
	select {}
}

// kill -9 of a process in the middle of creating one session and deleting
// another: while it lives, the sweep of another process leaves both its
// temporary directory and its tombstone (their flocks are held, even past
// LeftoverAge); once it is dead, the sweep removes both.
func TestSweepAfterKillRemovesOnlyTheDeadWritersLeftovers(t *testing.T) {
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := childCmd(t, "sweepstall", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_CWD="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	paths := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(paths) < 2 && sc.Scan() {
		kind, path, _ := strings.Cut(sc.Text(), " ")
		paths[kind] = path
	}
	if paths["tmp"] == "" || paths["tomb"] == "" {
		t.Fatalf("child reported %v", paths)
	}
	age(t, paths["tmp"])
	age(t, paths["tomb"])
	if n, err := r.SweepLeftovers(context.Background()); err != nil || n != 0 {
		t.Fatalf("while the writer lives: SweepLeftovers = %d, %v; want nothing removed", n, err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the live writer's %s: %v", p, err)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, err := r.SweepLeftovers(context.Background()); err != nil || n != 2 {
		t.Fatalf("after kill -9: SweepLeftovers = %d, %v; want 2 removed", n, err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s stayed: %v", p, err)
		}
	}
	if sums, err := r.List("", ListOptions{}); err != nil || len(sums) != 0 {
		t.Errorf("List = %v, %v; want no session (one was never created, one deleted)", sums, err)
	}
}

// The files of the search index (docs/storage.md, written by store/search).
const (
	searchIndexName = "index"
	searchToolsName = "tools"
)
