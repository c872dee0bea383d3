//go:build linux

package gitsnap

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// watching is a store that watches its working tree, closed with the
// test.
func watching(tb testing.TB, dir string) *Store {
	tb.Helper()
	s := storeFor(tb, dir)
	s.Watch = true
	tb.Cleanup(func() { s.Close() })
	return s
}

// snap takes a snapshot and returns its tree and how many git processes
// it started.
func snap(tb testing.TB, s *Store) (string, int64) {
	tb.Helper()
	before := s.gitRuns.Load()
	tree, err := s.Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return tree, s.gitRuns.Load() - before
}

// needWatcher fails (on CI) or skips the test when the store's first
// snapshot could not start a watcher here.
func needWatcher(tb testing.TB, s *Store) {
	tb.Helper()
	if off := s.WatchOff(); off != "" {
		if os.Getenv("CI") != "" {
			tb.Fatalf("no watcher on CI: %s", off)
		}
		tb.Skipf("NO WATCHER HERE, the test proves nothing: %s", off)
	}
}

func writeTestFile(tb testing.TB, p, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestUnchangedSnapshotRunsNoGit(t *testing.T) {
	needGit(t)
	dir := repo(t, 50)
	s := watching(t, dir)
	first, _ := snap(t, s)
	needWatcher(t, s)
	for i := 0; i < 3; i++ {
		tree, runs := snap(t, s)
		if tree != first || runs != 0 {
			t.Fatalf("unchanged snapshot %d: tree %s (want %s), %d git runs (want 0)", i, tree, first, runs)
		}
	}
	writeTestFile(t, filepath.Join(dir, "d01", "f00001.txt"), "changed\n")
	if tree, runs := snap(t, s); tree == first || runs == 0 {
		t.Fatalf("after a change: tree %s, %d git runs", tree, runs)
	}
}

// The watching store's trees always equal those of a store that runs git
// every time, snapshotting the same working tree at the same points (a
// fresh store would differ in a legitimate way: a file the index tracks
// stays in it when a .gitignore later ignores it).
func TestWatchedSnapshotsEqualGitsAfterRandomChanges(t *testing.T) {
	needGit(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := repo(t, 30)
			writeTestFile(t, filepath.Join(dir, ".gitignore"), "build/\n*.log\n")
			writeTestFile(t, filepath.Join(dir, "build", "out.bin"), "ignored\n")
			w, ref := watching(t, dir), storeFor(t, dir)
			snap(t, w)
			needWatcher(t, w)
			snap(t, ref)
			r := rand.New(rand.NewPCG(seed, 99))
			var files, dirs, logDirs []string
			for i := 0; i < 30; i++ {
				files = append(files, filepath.Join(fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i)))
			}
			pick := func(list []string) string {
				if len(list) == 0 {
					return ""
				}
				return list[r.IntN(len(list))]
			}
			abs := func(rel string) string { return filepath.Join(dir, rel) }
			for step := 0; step < 30; step++ {
				var op string
				switch k := r.IntN(14); k {
				case 0:
					f := pick(files)
					op = "write " + f
					os.WriteFile(abs(f), []byte(fmt.Sprintf("step %d\n", step)), 0o644)
				case 1:
					f := pick(files)
					op = "append " + f
					if fh, err := os.OpenFile(abs(f), os.O_APPEND|os.O_WRONLY, 0); err == nil {
						fmt.Fprintf(fh, "more %d\n", step)
						fh.Close()
					}
				case 2:
					f := pick(files)
					op = "chmod +x " + f
					os.Chmod(abs(f), 0o755)
				case 3:
					f := pick(files)
					op = "delete " + f
					os.Remove(abs(f))
				case 4:
					f := pick(files)
					to := filepath.Join(filepath.Dir(f), fmt.Sprintf("moved%d.txt", step))
					op = "rename " + f + " " + to
					if os.Rename(abs(f), abs(to)) == nil {
						files = append(files, to)
					}
				case 5:
					d := fmt.Sprintf("new%d", step)
					op = "mkdir + file " + d
					os.Mkdir(abs(d), 0o755)
					os.WriteFile(abs(filepath.Join(d, "a.txt")), []byte("a\n"), 0o644)
					dirs = append(dirs, d)
					files = append(files, filepath.Join(d, "a.txt"))
				case 6:
					d := filepath.Join(fmt.Sprintf("deep%d", step), "b", "c")
					op = "mkdir -p + file " + d
					os.MkdirAll(abs(d), 0o755)
					os.WriteFile(abs(filepath.Join(d, "x.txt")), []byte("x\n"), 0o644)
					dirs = append(dirs, d)
					files = append(files, filepath.Join(d, "x.txt"))
				case 7:
					d := pick(dirs)
					op = "rm -r " + d
					if d != "" {
						os.RemoveAll(abs(d))
					}
				case 8:
					l := fmt.Sprintf("link%d", step)
					op = "symlink " + l
					os.Symlink(pick(files), abs(l))
				case 9:
					op = "un-ignore build/"
					os.WriteFile(abs(".gitignore"), []byte("*.log\n"), 0o644)
				case 10:
					op = "ignore build/ again"
					os.WriteFile(abs(".gitignore"), []byte("build/\n*.log\n"), 0o644)
				case 11:
					f := filepath.Join("build", fmt.Sprintf("gen%d.o", step))
					op = "file in build/ " + f
					os.MkdirAll(abs("build"), 0o755)
					os.WriteFile(abs(f), []byte(fmt.Sprintf("o %d\n", step)), 0o644)
				case 12:
					d := fmt.Sprintf("logs%d", step)
					op = "mkdir + ignored file only " + d
					os.Mkdir(abs(d), 0o755)
					os.WriteFile(abs(filepath.Join(d, "x.log")), []byte("log\n"), 0o644)
					logDirs = append(logDirs, d)
				case 13:
					d := pick(logDirs)
					op = "file not ignored in " + d
					if d != "" {
						os.WriteFile(abs(filepath.Join(d, fmt.Sprintf("late%d.txt", step))), []byte("late\n"), 0o644)
					}
				}
				got, _ := snap(t, w)
				want, _ := snap(t, ref)
				if got != want {
					t.Fatalf("step %d (%s): watched tree %s, git's %s", step, op, got, want)
				}
				if again, runs := snap(t, w); again != got || runs != 0 {
					t.Fatalf("step %d (%s): the next, unchanged, snapshot gave %s with %d git runs", step, op, again, runs)
				}
			}
		})
	}
}

// An overflow of the event queue loses events, a new directory's among
// them: the watch set is made again, or a file then written in that
// directory would be missed.
func TestSnapshotAfterAQueueOverflowRunsGitAndWatchesAgain(t *testing.T) {
	needGit(t)
	dir := repo(t, 20)
	w, ref := watching(t, dir), storeFor(t, dir)
	snap(t, w)
	needWatcher(t, w)
	os.Mkdir(filepath.Join(dir, "fresh"), 0o755)
	w.hooks.overflow = true
	if _, runs := snap(t, w); runs == 0 {
		t.Fatal("a snapshot after an overflow ran no git")
	}
	w.hooks.overflow = false
	writeTestFile(t, filepath.Join(dir, "fresh", "new.txt"), "new\n")
	got, runs := snap(t, w)
	if want, _ := snap(t, ref); got != want || runs == 0 {
		t.Fatalf("a file in the new directory: tree %s (git's %s), %d git runs", got, want, runs)
	}
}

// What the watcher cannot watch turns it off for the store: every
// snapshot runs git, as without one.
func TestSnapshotsRunGitWhereTheTreeCannotBeWatched(t *testing.T) {
	needGit(t)
	cases := map[string]func(t *testing.T, dir string, s *Store){
		"watch refused (ENOSPC)": func(t *testing.T, dir string, s *Store) {
			s.hooks.addWatch = func(fd int, p string, mask uint32) (int, error) {
				if strings.HasSuffix(p, "d07") {
					return -1, unix.ENOSPC
				}
				return unix.InotifyAddWatch(fd, p, mask)
			}
		},
		"watch refused (EACCES)": func(t *testing.T, dir string, s *Store) {
			s.hooks.addWatch = func(fd int, p string, mask uint32) (int, error) {
				if strings.HasSuffix(p, "d03") {
					return -1, unix.EACCES
				}
				return unix.InotifyAddWatch(fd, p, mask)
			}
		},
		"more directories than its share of watches": func(t *testing.T, dir string, s *Store) {
			s.hooks.maxWatches = 12
		},
		"NFS": func(t *testing.T, dir string, s *Store) {
			s.hooks.statfs = func(string) (int64, error) { return 0x6969, nil }
		},
		"nested repository": func(t *testing.T, dir string, s *Store) {
			run(t, filepath.Join(dir, "d02"), "init", "-q")
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := repo(t, 20)
			s := watching(t, dir)
			setup(t, dir, s)
			first, _ := snap(t, s)
			if s.WatchOff() == "" {
				t.Fatal("the watcher is still on")
			}
			tree, runs := snap(t, s)
			if tree != first || runs == 0 {
				t.Fatalf("unchanged: tree %s (want %s), %d git runs (want some)", tree, first, runs)
			}
		})
	}
}

// A nested repository made after the watch set was: the watch set is
// made again, finds it, and the watcher stops.
func TestANestedRepositoryMadeLaterTurnsTheWatcherOff(t *testing.T) {
	needGit(t)
	dir := repo(t, 20)
	s := watching(t, dir)
	snap(t, s)
	needWatcher(t, s)
	run(t, filepath.Join(dir, "d02"), "init", "-q")
	snap(t, s)
	if s.WatchOff() == "" {
		t.Fatal("the watcher is still on")
	}
	if _, runs := snap(t, s); runs == 0 {
		t.Fatal("an unchanged snapshot ran no git")
	}
}

// A write after the watcher was cleared, while git runs, makes the next
// snapshot run git: the watcher is cleared at the start of a snapshot,
// never after it.
func TestAWriteDuringASnapshotMakesTheNextOneRunGit(t *testing.T) {
	needGit(t)
	dir := repo(t, 20)
	w, ref := watching(t, dir), storeFor(t, dir)
	snap(t, w)
	needWatcher(t, w)
	writeTestFile(t, filepath.Join(dir, "d01", "f00001.txt"), "first change\n")
	w.hooks.afterAdd = func() {
		w.hooks.afterAdd = nil
		writeTestFile(t, filepath.Join(dir, "d02", "f00002.txt"), "written while git ran\n")
	}
	snap(t, w)
	got, runs := snap(t, w)
	if want, _ := snap(t, ref); got != want || runs == 0 {
		t.Fatalf("after a write during a snapshot: tree %s (git's %s), %d git runs", got, want, runs)
	}
}

// Keep prunes what it does not keep, the last snapshot's tree among them:
// a watcher trusts that tree no more, whichever store (or process) kept.
func TestSnapshotAfterAKeepRunsGitAndItsTreeExists(t *testing.T) {
	needGit(t)
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("by another store: %v", other), func(t *testing.T) {
			dir := repo(t, 20)
			s := watching(t, dir)
			writeTestFile(t, filepath.Join(dir, "only-here.txt"), "a tree the repository lacks\n")
			tree, _ := snap(t, s)
			needWatcher(t, s)
			keeper := s
			if other {
				keeper = &Store{Repo: s.Repo, GitDir: s.GitDir, Index: s.Index}
			}
			if err := keeper.Keep(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			again, runs := snap(t, s)
			if again != tree || runs == 0 {
				t.Fatalf("after a keep: tree %s (want %s), %d git runs", again, tree, runs)
			}
			if _, err := s.git(context.Background(), nil, "cat-file", "-e", again); err != nil {
				t.Fatalf("the tree is missing: %v", err)
			}
			if _, runs := snap(t, s); runs != 0 {
				t.Fatalf("the snapshot after: %d git runs", runs)
			}
		})
	}
}

// What git ignores follows the .gitignore files of the tree, the
// repository's info/exclude and the user's global excludes: a change of
// any makes the watch set again, so a directory they stop ignoring is
// watched.
func TestAnIgnoreRuleChangeMakesTheWatchSetAgain(t *testing.T) {
	needGit(t)
	for _, where := range []string{".gitignore", "d01/.gitignore", "info/exclude", "global excludes"} {
		t.Run(where, func(t *testing.T) {
			xdg := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", xdg)
			dir := repo(t, 20)
			rules, gen := filepath.Join(dir, filepath.FromSlash(where)), filepath.Join(dir, "gen")
			switch where {
			case "d01/.gitignore":
				gen = filepath.Join(dir, "d01", "gen")
			case "info/exclude":
				rules = filepath.Join(dir, ".git", "info", "exclude")
			case "global excludes":
				rules = filepath.Join(xdg, "git", "ignore")
			}
			writeTestFile(t, rules, "gen/\n")
			writeTestFile(t, filepath.Join(gen, "a.txt"), "a\n")
			w, ref := watching(t, dir), storeFor(t, dir)
			first, _ := snap(t, w)
			needWatcher(t, w)
			snap(t, ref)
			writeTestFile(t, rules, "")
			got, runs := snap(t, w)
			if want, _ := snap(t, ref); got != want || got == first || runs == 0 {
				t.Fatalf("after the rule went: tree %s (git's %s, before %s), %d git runs", got, want, first, runs)
			}
			writeTestFile(t, filepath.Join(gen, "a.txt"), "changed\n")
			got, _ = snap(t, w)
			if want, _ := snap(t, ref); got != want {
				t.Fatalf("a change in the directory no longer ignored: tree %s, git's %s", got, want)
			}
		})
	}
}

// A file of the tree with another link outside it changes without an
// event in any directory of the tree: the file itself is watched.
func TestAWriteThroughAHardLinkOutsideTheTreeIsSeen(t *testing.T) {
	needGit(t)
	for _, later := range []bool{false, true} {
		t.Run(fmt.Sprintf("linked after the watch set: %v", later), func(t *testing.T) {
			dir := repo(t, 20)
			outside := filepath.Join(t.TempDir(), "other-link")
			inside := filepath.Join(dir, "d03", "linked.txt")
			writeTestFile(t, outside, "one\n")
			if !later {
				if err := os.Link(outside, inside); err != nil {
					t.Fatal(err)
				}
			}
			w, ref := watching(t, dir), storeFor(t, dir)
			snap(t, w)
			needWatcher(t, w)
			if later {
				if err := os.Link(outside, inside); err != nil {
					t.Fatal(err)
				}
				snap(t, w)
			}
			snap(t, ref)
			writeTestFile(t, outside, "two\n")
			got, _ := snap(t, w)
			if want, _ := snap(t, ref); got != want {
				t.Fatalf("after a write through the other link: tree %s, git's %s", got, want)
			}
		})
	}
}

// Close releases the watcher's inotify descriptor; the store still takes
// snapshots, by git.
func TestCloseReleasesTheWatcher(t *testing.T) {
	needGit(t)
	dir := repo(t, 5)
	s := watching(t, dir)
	first, _ := snap(t, s)
	needWatcher(t, s)
	fd := s.w.fd
	if link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); link != "anon_inode:inotify" {
		t.Fatalf("the watcher's descriptor %d is %q", fd, link)
	}
	s.Close()
	if link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); link == "anon_inode:inotify" {
		t.Fatalf("descriptor %d is still an inotify one after Close", fd)
	}
	if tree, runs := snap(t, s); tree != first || runs == 0 {
		t.Fatalf("after Close: tree %s (want %s), %d git runs", tree, first, runs)
	}
}

// Watchers bounds the live watchers: past it, the store that snapshotted
// least recently lets its watcher go, and its next snapshot runs git.
func TestWatchersKeepOnlyTheMostRecentlyUsedWatchers(t *testing.T) {
	needGit(t)
	ws := NewWatchers(1)
	a, b := watching(t, repo(t, 5)), watching(t, repo(t, 5))
	a.Watchers, b.Watchers = ws, ws
	snap(t, a)
	needWatcher(t, a)
	if _, runs := snap(t, a); runs != 0 {
		t.Fatalf("a's unchanged snapshot: %d git runs", runs)
	}
	snap(t, b)
	if a.w != nil || b.w == nil {
		t.Fatalf("after b's snapshot: a's watcher %v, b's %v", a.w, b.w)
	}
	if _, runs := snap(t, a); runs == 0 {
		t.Fatal("a's snapshot without its watcher ran no git")
	}
	if _, runs := snap(t, a); runs != 0 || b.w != nil {
		t.Fatalf("a's watcher again: %d git runs, b's watcher %v", runs, b.w)
	}
}

// A private directory removed and made again holds none of the trees the
// watcher remembers: no generation, no trust.
func TestSnapshotAfterThePrivateDirectoryWentRunsGit(t *testing.T) {
	needGit(t)
	dir := repo(t, 5)
	s := watching(t, dir)
	writeTestFile(t, filepath.Join(dir, "only-here.txt"), "a tree the repository lacks\n")
	tree, _ := snap(t, s)
	needWatcher(t, s)
	if err := os.RemoveAll(s.GitDir); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.Index)
	again, runs := snap(t, s)
	if again != tree || runs == 0 {
		t.Fatalf("after the private directory went: tree %s (want %s), %d git runs", again, tree, runs)
	}
	if _, err := s.git(context.Background(), nil, "cat-file", "-e", again); err != nil {
		t.Fatalf("the tree is missing: %v", err)
	}
}
