package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/store/internal/fsys"
)

// LeftoverAge is how old a temporary file or directory must be before
// SweepLeftovers takes it for abandoned (docs/storage.md, "Leftovers of a
// crash"). Its writers finish in milliseconds; an hour leaves room for a
// slow disk, a stopped process and a clock that steps back a little.
const LeftoverAge = time.Hour

// SweepLeftovers removes what interrupted writers (a kill -9, a power
// loss) left under the root and nothing else (docs/storage.md, "Leftovers
// of a crash"):
//
//   - a .deleted-<id>-<random> tombstone, once its flock can be taken: the
//     rename that made it is the delete's commit point, and the deleter
//     holds the session's lock until the tree is gone;
//   - a .tmp-<id>-<random> session being created, once its flock can be
//     taken and it is older than LeftoverAge (its creator makes it a
//     moment before it locks it);
//   - a <name>.tmp-<digits> file of WriteFileAtomic or of a summary index
//     rebuild, which no lock guards, once older than LeftoverAge;
//   - a .search/<name>.tmp-<digits> file, once the search index's flock can
//     be taken (a rebuild holds it from creating the file to renaming it).
//
// It never fails a reader or writer: what it cannot remove, or cannot be
// sure of, stays. removed counts what went; err joins what went wrong.
// It stops early when ctx ends.
func (r *Root) SweepLeftovers(ctx context.Context) (removed int, err error) {
	var errs []error
	old := time.Now().Add(-LeftoverAge)
	sw := sweeper{fs: r.fs, old: old, errs: &errs}
	removed += sw.files(r.dir)
	scopes, _ := sw.readDir(r.sessionsDir())
	for _, sc := range scopes {
		if ctx.Err() != nil {
			break
		}
		if !sc.IsDir() || strings.HasPrefix(sc.Name(), ".") {
			continue
		}
		removed += sw.scope(ctx, filepath.Join(r.sessionsDir(), sc.Name()))
	}
	if e := ctx.Err(); e != nil {
		errs = append(errs, e)
	}
	return removed, errors.Join(errs...)
}

type sweeper struct {
	fs   fsys.FS
	old  time.Time
	errs *[]error
}

func (sw sweeper) fail(err error) { *sw.errs = append(*sw.errs, err) }

// readDir lists dir; ok is false when it cannot: a directory that does
// not exist has nothing to sweep, and one that cannot be read is reported.
func (sw sweeper) readDir(dir string) (entries []os.DirEntry, ok bool) {
	entries, err := sw.fs.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			sw.fail(fmt.Errorf("sweep %s: %w", dir, err))
		}
		return nil, false
	}
	return entries, true
}

// scope sweeps one scope directory and its search index.
func (sw sweeper) scope(ctx context.Context, dir string) int {
	entries, ok := sw.readDir(dir)
	if !ok {
		return 0
	}
	n := 0
	for _, e := range entries {
		if ctx.Err() != nil {
			return n
		}
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case !e.IsDir():
			if uniqueTemp(name) && sw.aged(e) {
				n += sw.remove(path, nil)
			}
		case strings.HasPrefix(name, ".deleted-"):
			n += sw.lockedRemove(path, path)
		case strings.HasPrefix(name, ".tmp-"):
			if sw.aged(e) {
				n += sw.lockedRemove(path, path)
			}
		}
	}
	// The search index's temporary files: a rebuild holds the index's
	// flock all the while one of them exists (store/search, rebuildSearch).
	search := filepath.Join(dir, searchDirName)
	entries, _ = sw.readDir(search)
	for _, e := range entries {
		if !e.IsDir() && uniqueTemp(e.Name()) {
			n += sw.lockedRemove(search, filepath.Join(search, e.Name()))
		}
	}
	return n
}

// files sweeps the unique temporary files of one directory (the root's:
// WriteFileAtomic's, of preferences.json).
func (sw sweeper) files(dir string) int {
	entries, _ := sw.readDir(dir)
	n := 0
	for _, e := range entries {
		if !e.IsDir() && uniqueTemp(e.Name()) && sw.aged(e) {
			n += sw.remove(filepath.Join(dir, e.Name()), nil)
		}
	}
	return n
}

// aged reports that e was last changed before the cut-off. An entry that
// cannot be examined is left alone.
func (sw sweeper) aged(e os.DirEntry) bool {
	fi, err := e.Info()
	return err == nil && fi.ModTime().Before(sw.old)
}

// lockedRemove removes path if the flock of lockDir can be taken without
// waiting: its writer, in this process or another, is gone. The lock is
// held until the removal is done, so no writer can begin meanwhile.
func (sw sweeper) lockedRemove(lockDir, path string) int {
	lock, err := sw.fs.Lock(lockDir)
	switch {
	case errors.Is(err, fsys.ErrWouldBlock), errors.Is(err, os.ErrNotExist):
		// Being written, or gone by itself already.
		return 0
	case err != nil:
		sw.fail(fmt.Errorf("sweep %s: %w", path, err))
		return 0
	}
	return sw.remove(path, lock)
}

func (sw sweeper) remove(path string, lock io.Closer) int {
	err := sw.fs.RemoveAll(path)
	if lock != nil {
		lock.Close()
	}
	if err != nil {
		sw.fail(fmt.Errorf("sweep %s: %w", path, err))
		return 0
	}
	return 1
}

// uniqueTemp reports a name fsys.CreateUnique made: <name>.tmp-<digits>. The
// fixed <name>.tmp of header.json and workspaces.json is not one: its
// writer reuses what a crash left.
func uniqueTemp(name string) bool {
	i := strings.LastIndex(name, ".tmp-")
	if i < 0 {
		return false
	}
	digits := name[i+len(".tmp-"):]
	if digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// searchDirName is the search index's directory in a scope directory
// (docs/storage.md; written by store/search).
const searchDirName = ".search"
