package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A session of a workspace works in the workspace's directory: continuing
// or creating one in another directory is refused, whether or not the
// workspace has a session to continue, and writes nothing.
func TestContinueRecentRefusesACwdOutsideTheWorkspace(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, err := r.AddWorkspace(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if _, err := r.ContinueRecent(ws.ID, elsewhere); !errors.Is(err, ErrInvalid) {
		t.Fatalf("continue in another directory, none to continue: %v", err)
	}
	scope, _ := r.scopeDir(ws.ID)
	if entries, err := os.ReadDir(scope); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused continue left %v (%v)", entries, err)
	}
	if _, err := r.Create(ws.ID, elsewhere); !errors.Is(err, ErrInvalid) {
		t.Fatalf("create in another directory: %v", err)
	}
	if _, err := r.CreateWith(ws.ID, elsewhere, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("create with in another directory: %v", err)
	}
	s, err := r.ContinueRecent(ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	if _, err := r.ContinueRecent(ws.ID, elsewhere); !errors.Is(err, ErrInvalid) {
		t.Fatalf("continue in another directory, one to continue: %v", err)
	}
	// Another spelling of the workspace's directory is the directory.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws.Cwd, link); err != nil {
		t.Fatal(err)
	}
	got, err := r.ContinueRecent(ws.ID, link)
	if err != nil || got.ID() != s.ID() {
		t.Fatalf("continue through a symlink: %v", err)
	}
	got.Close()
	// An unregistered workspace has no directory to agree with.
	if _, err := r.ContinueRecent(newID(), ws.Cwd); !errors.Is(err, ErrWorkspaceNotFound) {
		t.Fatalf("continue in an unregistered workspace: %v", err)
	}
	// Independent sessions work anywhere.
	ind, err := r.ContinueRecent("", elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	ind.Close()
}
