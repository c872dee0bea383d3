package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
)

// A base write a crash stopped leaves its locked temporary directory
// inside the fork's directory, where no sweep of the scope looks: the
// fork's next open for writing removes it, and leaves alone one whose
// writer still holds its lock.
func TestAForksOpenRemovesWhatABaseWriteACrashStoppedLeft(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 2)
	defer s.Close()
	f := mustFork(t, s, 4, "")
	dir := f.Dir()
	f.Close()
	left := filepath.Join(dir, ".tmp-"+f.ID()+"-0123456789abcdef")
	busy := filepath.Join(dir, ".tmp-"+f.ID()+"-fedcba9876543210")
	for _, d := range []string{left, busy} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, headerFile), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := fsys.OS{}.Lock(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	o, err := r2(t, r).Open("", f.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the leftover of a stopped base write is still there: %v", err)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Fatalf("a base write at work lost its directory: %v", err)
	}
	wantMessages(t, o.Messages(), history(2)[:4])
}
