package search

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
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
func newTestRoot(t testing.TB) (*testRoot, *storetest.FaultFS) {
	t.Helper()
	r := openRoot(t, filepath.Join(t.TempDir(), "data"))
	ffs := &storetest.FaultFS{FS: fsys.OS{}}
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
