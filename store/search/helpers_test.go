package search

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/fsys"
)

// testRoot is a data root with its search index, as the engine wires them.
type testRoot struct {
	*store.Root
	ix *Index
}

func (r *testRoot) Search(ctx context.Context, q Query) (Result, error) { return r.ix.Search(ctx, q) }

func (r *testRoot) rebuildSearch(ctx context.Context, scopeDir, ws string) error {
	return r.ix.rebuildSearch(ctx, scopeDir, ws)
}

func (r *testRoot) scopeDir(ws string) (string, error) { return r.ScopeDir(ws) }

// newTestRoot returns a root in a temp dir whose search index writes and
// reads through a fault-injecting file system (disarmed).
func newTestRoot(t testing.TB) (*testRoot, *faultFS) {
	t.Helper()
	r := openRoot(t, filepath.Join(t.TempDir(), "data"))
	ffs := &faultFS{FS: fsys.OS{}}
	r.ix.fs = ffs
	return r, ffs
}

// openRoot opens the root at dir with a search index of its own: what
// another process sees.
func openRoot(t testing.TB, dir string) *testRoot {
	t.Helper()
	r, err := store.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &testRoot{Root: r, ix: New(r)}
}

func mustCommit(t testing.TB, s *store.Session, msgs []convo.Message, rt []store.RuntimeRecord, edit func(*store.Header)) {
	t.Helper()
	if err := s.Commit(msgs, rt, edit); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// faultFS fails chosen operations. hook sees every operation (op, path);
// returning a non-nil fault injects it.
type faultFS struct {
	fsys.FS
	mu   sync.Mutex
	hook func(op, path string) *fault
}

// fault is one injected failure. partial > 0 makes a write store that many
// bytes before failing (a torn write).
type fault struct {
	err     error
	partial int
}

var errInjected = errors.New("injected fault")

func (f *faultFS) arm(hook func(op, path string) *fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// failOnce arms a fault on the first operation op on a path ending in
// suffix.
func (f *faultFS) failOnce(op, suffix string, flt fault) {
	done := false
	f.arm(func(o, p string) *fault {
		if !done && o == op && strings.HasSuffix(p, suffix) {
			done = true
			return &flt
		}
		return nil
	})
}

func (f *faultFS) check(op, path string) *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hook == nil {
		return nil
	}
	return f.hook(op, path)
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if flt := f.check("open", name); flt != nil {
		return nil, flt.err
	}
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: h, fs: f, path: name}, nil
}

func (f *faultFS) Rename(o, n string) error {
	if flt := f.check("rename", o); flt != nil {
		return flt.err
	}
	return f.FS.Rename(o, n)
}

func (f *faultFS) Mkdir(name string, perm os.FileMode) error {
	if flt := f.check("mkdir", name); flt != nil {
		return flt.err
	}
	return f.FS.Mkdir(name, perm)
}

func (f *faultFS) SyncDir(name string) error {
	if flt := f.check("syncdir", name); flt != nil {
		return flt.err
	}
	return f.FS.SyncDir(name)
}

func (f *faultFS) Lock(dir string) (io.Closer, error) {
	if flt := f.check("lock", dir); flt != nil {
		return nil, flt.err
	}
	return f.FS.Lock(dir)
}

func (f *faultFS) RemoveAll(name string) error {
	if flt := f.check("remove", name); flt != nil {
		return flt.err
	}
	return f.FS.RemoveAll(name)
}

type faultFile struct {
	fsys.File
	fs   *faultFS
	path string
}

func (f *faultFile) write(p []byte, off int64, at bool) (int, error) {
	if flt := f.fs.check("write", f.path); flt != nil {
		n := min(flt.partial, len(p))
		if n > 0 {
			if at {
				f.File.WriteAt(p[:n], off)
			} else {
				f.File.Write(p[:n])
			}
		}
		return n, flt.err
	}
	if at {
		return f.File.WriteAt(p, off)
	}
	return f.File.Write(p)
}

func (f *faultFile) Write(p []byte) (int, error)              { return f.write(p, 0, false) }
func (f *faultFile) WriteAt(p []byte, off int64) (int, error) { return f.write(p, off, true) }
