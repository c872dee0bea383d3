package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
)

// Two Roots on one data root stand for two processes: each flock is its
// own open file description.

// A handle that opened read-only because another process held the lock
// writes once that process has closed the session, without being opened
// again.
func TestReadOnlyHandleWritesOnceTheOtherWriterCloses(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(1), nil, nil)
	o, err := openRoot(t, r.Dir()).Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Commit(history(2), nil, nil); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("commit while the other writer holds it: %v", err)
	}
	if err := o.TryWritable(); !errors.Is(err, ErrSessionLocked) || errors.Is(err, ErrStale) || !o.ReadOnly() {
		t.Fatalf("try while the other writer holds it: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, o, history(2), nil, func(h *Header) { h.Title = "mine" })
	if o.ReadOnly() || o.ReadOnlyReason() != nil {
		t.Fatalf("still read-only: %v", o.ReadOnlyReason())
	}
	// It holds the lock now: the first process reads it read-only.
	again, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !errors.Is(again.ReadOnlyReason(), ErrSessionLocked) {
		t.Fatalf("the lock was not taken: %v", again.ReadOnlyReason())
	}
	wantMessages(t, again.Messages(), history(2))
	if again.Header().Title != "mine" {
		t.Fatalf("header %+v", again.Header())
	}
}

// If the other writer changed the session before it let go, the read-only
// handle's copy is out of date: it stays read-only (ErrStale), writes
// nothing, and opening the session again gives a writable handle.
func TestReadOnlyHandleOfAChangedSessionMustBeOpenedAgain(t *testing.T) {
	for _, change := range []string{"commit", "title"} {
		t.Run(change, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(1), nil, nil)
			other := openRoot(t, r.Dir())
			o, err := other.Open("", s.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if change == "commit" {
				mustCommit(t, s, history(2), nil, nil)
			} else if err := s.SaveMeta(func(h *Header) { h.Title = "theirs" }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			before := snapshotDir(t, s.Dir())
			err = o.SaveMeta(func(h *Header) { h.Title = "stale" })
			if !errors.Is(err, ErrSessionLocked) || !errors.Is(err, ErrStale) {
				t.Fatalf("write of a stale handle: %v", err)
			}
			if after := snapshotDir(t, s.Dir()); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("a stale handle wrote")
			}
			// It let the lock go again.
			fresh, err := other.Open("", s.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if fresh.ReadOnly() {
				t.Fatalf("opened again: %v", fresh.ReadOnlyReason())
			}
			mustCommit(t, fresh, history(3), nil, nil)
		})
	}
}

// switchFS is a file system that is mounted read-only until ro is cleared.
type switchFS struct {
	fsys.OS
	ro bool
}

func (f *switchFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if f.ro && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, erofs("open", name)
	}
	return f.OS.OpenFile(name, flag, perm)
}

// A session opened on a read-only file system writes once the file system
// is writable again, through the same handle.
func TestReadOnlyFileSystemSessionWritesOnceWritableAgain(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	fs := &switchFS{ro: true}
	r.fs = fs
	o, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Commit(history(2), nil, nil); !errors.Is(err, ErrNotWritable) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("commit on a read-only file system: %v", err)
	}
	fs.ro = false
	mustCommit(t, o, history(2), nil, nil)
	r2 := openRoot(t, r.Dir())
	msgs, err := r2.ReadMessages("", s.ID(), 0, len(history(2)))
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, msgs, history(2))
	// And it holds the lock like any writer.
	other, err := r2.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if !errors.Is(other.ReadOnlyReason(), ErrSessionLocked) {
		t.Fatalf("another process's handle: %v", other.ReadOnlyReason())
	}
}
