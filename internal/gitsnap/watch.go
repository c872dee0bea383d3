package gitsnap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A snapshot of a working tree that did not change since the last one is
// the last one's tree. Git finds that out by reading its index and
// lstat-ing every file (tens of milliseconds for 10,000 files, more on a
// busy machine); a watcher knows it without looking. With Store.Watch,
// the store keeps one (watch_linux.go: inotify; elsewhere none, and git
// runs every time) from its first snapshot on, and a snapshot runs git
// unless the watcher vouches that nothing changed. docs/storage.md, "File
// checkpoints", says what it watches and when it gives up.
//
// It vouches only when all of these hold, and runs git otherwise:
//
//   - it saw no event since it was cleared, at the start of the last
//     snapshot that ran git (after it drained what was queued: the kernel
//     queues an event before the writing call returns, so every change
//     made before that drain is in it, and every change after it makes
//     the next snapshot run git, even one git's run missed);
//   - its watch set is whole: every directory of the working tree but
//     .git and those git ignores as a whole, made after git said which
//     those are and checked against git's second answer once made; no
//     queue overflow, no new or moved directory, no .gitignore, excludes
//     or configuration file changed since (any of those, and the watch
//     set is made again before the next snapshot's git run);
//   - the last snapshot's tree is still kept: Keep (of any process,
//     since another one may hold the session meanwhile) writes a new
//     generation (generationFile) before it prunes, and a tree is trusted
//     only under the generation it was made in.
//
// It stops for good, for the store's life (then git runs every time, as
// without one), on what it cannot watch: a file system inotify does not
// see every change of (only local ones are trusted), a nested repository
// or submodule, more directories than its share of the user's inotify
// watches, a watch the kernel refuses. Changes it cannot see at all,
// whatever it watches: a write through a shared memory map (until the
// file is closed), and a write through a hard link outside the tree to a
// file inside it that had a single link when the watch set was made.

// generationFile, in the private git directory, changes each time Keep
// prunes objects. A watching store writes the first; one that is absent
// (a private directory made again) vouches for no tree.
const generationFile = "loop-generation"

// generation reads the private directory's generation; false when it
// cannot be read.
func (s *Store) generation() (string, bool) {
	b, err := os.ReadFile(filepath.Join(s.GitDir, generationFile))
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

// newGeneration writes a generation no store has seen.
func (s *Store) newGeneration() error {
	var b [16]byte
	rand.Read(b[:])
	if err := os.WriteFile(filepath.Join(s.GitDir, generationFile), []byte(hex.EncodeToString(b[:])), 0o600); err != nil {
		return fmt.Errorf("keep: %w", err)
	}
	return nil
}

// watchState is what a watcher knows, on every platform.
type watchState struct {
	dirty   bool   // something may have changed since the last clear
	rebuild bool   // the watch set may no longer cover what it must
	tree    string // the tree of the last snapshot that ran git, "" for none
	gen     string // the generation it was made in
}

// unchanged: the working tree is as it was at the last snapshot, whose
// tree still exists.
func (w *watchState) unchanged(gen string, genOK bool) (string, bool) {
	if w.dirty || w.rebuild || w.tree == "" || !genOK || gen != w.gen {
		return "", false
	}
	return w.tree, true
}

// done records the tree the snapshot that began after the last clear made.
func (w *watchState) done(tree, gen string) { w.tree, w.gen = tree, gen }

// watchHooks are test seams; their zero value is the real thing.
type watchHooks struct {
	statfs     func(path string) (int64, error)                    // the file system type of path
	addWatch   func(fd int, path string, mask uint32) (int, error) // inotify_add_watch
	overflow   bool                                                // a drain finds the queue overflowed, its events lost
	afterAdd   func()                                              // between git add and write-tree
	maxWatches int                                                 // the watcher's share of the user's inotify watches
}

// offError is why a watcher cannot be trusted on this working tree, for
// the store's life.
type offError struct{ reason string }

func (e *offError) Error() string { return e.reason }

// takeWatcher gives the snapshot the store's watcher (nil: none yet),
// and whether the snapshot may use or start one.
func (s *Store) takeWatcher() (*watcher, bool) {
	if !s.Watch {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.off != "" || s.busy {
		// A snapshot at the same time as another runs git.
		return nil, false
	}
	s.busy = true
	w := s.w
	s.w = nil
	return w, true
}

// putWatcher gives it back, or closes it when the store was closed
// meanwhile.
func (s *Store) putWatcher(w *watcher) {
	s.mu.Lock()
	s.busy = false
	keep := !s.closed && s.off == "" && !s.evicted
	s.evicted = false
	if keep {
		s.w = w
	}
	s.mu.Unlock()
	if !keep && w != nil {
		w.close()
	}
}

// startWatcher starts a watcher on the working tree, nil when it cannot:
// then this snapshot runs git without one, and after three failures in a
// row, or one it cannot recover from, every snapshot does.
func (s *Store) startWatcher(ctx context.Context) *watcher {
	w, err := s.newWatcher(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var off *offError
	switch {
	case err == nil:
		s.failures = 0
		return w
	case errors.As(err, &off):
		s.off = off.reason
	case ctx.Err() == nil:
		if s.failures++; s.failures >= 3 {
			s.off = err.Error()
		}
	}
	return nil
}

// WatchOff says why the store no longer watches its working tree, ""
// while it may.
func (s *Store) WatchOff() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off
}

// Close releases the store's watcher. Snapshots still work, by git.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	w := s.w
	s.w = nil
	s.mu.Unlock()
	if w != nil {
		w.close()
	}
	if s.Watchers != nil {
		s.Watchers.forget(s)
	}
	return nil
}

// letGo closes the store's watcher for Watchers; the next snapshot runs
// git and starts another.
func (s *Store) letGo() {
	s.mu.Lock()
	w := s.w
	s.w = nil
	if s.busy {
		s.evicted = true // the snapshot that has it closes it
	}
	s.mu.Unlock()
	if w != nil {
		w.close()
	}
}

// ignoredDirs are the directories of the working tree that git ignores as
// a whole (slash-separated, relative to Repo.Top): excluded themselves,
// so git never looks inside them, and holding no file of the private
// index. A directory whose files are all ignored but that is not
// excluded itself is not one: a new file there may not be.
func (s *Store) ignoredDirs(ctx context.Context) (map[string]bool, error) {
	out, err := s.git(ctx, nil, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, p := range bytes.Split(out, []byte{0}) {
		if d, ok := bytes.CutSuffix(p, []byte("/")); ok && len(d) > 0 {
			// Without the slash: check-ignore matches "d/" against
			// "d/*" too.
			in.Write(d)
			in.WriteByte(0)
		}
	}
	dirs := map[string]bool{}
	if in.Len() == 0 {
		return dirs, nil
	}
	out, err = s.git(ctx, &in, "check-ignore", "-z", "--stdin")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return dirs, nil // none is excluded itself
	}
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			dirs[p] = true
		}
	}
	return dirs, nil
}

// ruleFiles are the files whose change may change what git ignores or how
// it adds: the repository's info/exclude, every configuration file git
// reads (they may name core.excludesFile), the standard places of the
// user's configuration and excludes even when absent, and the excludes
// file the configuration names.
func (s *Store) ruleFiles(ctx context.Context) ([]string, error) {
	out, err := s.git(ctx, nil, "config", "-z", "--show-origin", "--list")
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return nil, err
	}
	files := []string{s.Repo.Exclude, "/etc/gitconfig"}
	home := os.Getenv("HOME")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	excludes := ""
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
		excludes = filepath.Join(xdg, "git", "ignore")
	}
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		if origin, ok := strings.CutPrefix(f[i], "file:"); ok {
			files = append(files, s.abs(origin))
		}
		key, value, _ := strings.Cut(f[i+1], "\n")
		if strings.EqualFold(key, "core.excludesfile") {
			switch {
			case value == "~" || strings.HasPrefix(value, "~/"):
				excludes = filepath.Join(home, value[1:])
			case strings.HasPrefix(value, "~") || strings.HasPrefix(value, "%("):
				return nil, &offError{"core.excludesFile " + value + " is a path Loop does not resolve"}
			default:
				excludes = s.abs(value)
			}
		}
	}
	if excludes != "" {
		files = append(files, excludes)
	}
	// A rule file that is a symbolic link changes where it points to.
	for _, f := range files {
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f {
			files = append(files, real)
		}
	}
	return files, nil
}

// abs is p, relative to the working tree's top when it is relative (git's
// directory when it runs for the store).
func (s *Store) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.Repo.Top, p)
}
