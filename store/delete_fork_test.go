package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/store/internal/storetest"
)

// A rewind whose fork is still inside the session's directory
// (pendingFork: its move into the scope failed, or a crash came between
// the header and the move) has happened: deleting the session, with or
// without opening it, must not delete the fork of what it dropped.
func TestDeletingARewoundSessionKeepsTheForkStillWaitingInsideIt(t *testing.T) {
	for _, through := range []string{"handle", "root"} {
		t.Run(through, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s := storedWith(t, r, t.TempDir(), 3)
			ffs.Arm(func(op, path string) *storetest.Fault {
				if op == "rename" && strings.Contains(filepath.Base(path), forkDirPrefix) {
					return &storetest.Fault{Err: storetest.ErrInjected}
				}
				return nil
			})
			forkID, err := s.Rewind(8)
			if err != nil {
				t.Fatal(err)
			}
			ffs.Arm(nil)
			if through == "handle" {
				if err := s.Delete(); err != nil {
					t.Fatal(err)
				}
			} else {
				s.Close()
				if err := r.DeleteSession("", s.ID()); err != nil {
					t.Fatal(err)
				}
			}
			f, err := r2(t, r).Open("", forkID)
			if err != nil {
				t.Fatalf("the fork %s the rewind returned, after its session was deleted: %v", forkID, err)
			}
			defer f.Close()
			wantMessages(t, f.Messages(), history(3))
		})
	}
}

// Root.DeleteSession reads neither the logs nor the cwd, so that a
// listed session whose working directory is gone can still be deleted
// (docs/storage.md): also one with forks, whose part it writes into
// them first without needing the directory the conversation worked in.
func TestDeletingAParentWhoseWorkingDirectoryIsGone(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	s := storedWith(t, r, cwd, 3)
	f := mustFork(t, s, 8, "")
	f.Close()
	s.Close()
	if err := os.RemoveAll(cwd); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteSession("", s.ID()); err != nil {
		t.Fatalf("deleting a session whose working directory is gone, with a fork: %v", err)
	}
	// The fork, whose cwd is the same, opens once it is back, with the
	// part its base now holds.
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	o, err := r2(t, r).Open("", f.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(3)[:8])
}

// TestDeletingARewoundSessionIsAtomicAtEveryStep crashes the deletion of
// a session whose rewind's fork still waits inside its directory before
// each file system operation in turn, through a handle and through the
// root: whatever happened, the fork opens with the whole history the
// rewind dropped, once the session (if it is still there) has been
// opened for writing.
func TestDeletingARewoundSessionIsAtomicAtEveryStep(t *testing.T) {
	for _, through := range []string{"handle", "root"} {
		t.Run(through, func(t *testing.T) {
			for n := 0; ; n++ {
				r, ffs := newTestRoot(t)
				s := storedWith(t, r, t.TempDir(), 3)
				ffs.Arm(func(op, path string) *storetest.Fault {
					if op == "rename" && strings.Contains(filepath.Base(path), forkDirPrefix) {
						return &storetest.Fault{Err: storetest.ErrInjected}
					}
					return nil
				})
				forkID, err := s.Rewind(8)
				if err != nil {
					t.Fatal(err)
				}
				ffs.Arm(nil)
				if through == "root" {
					s.Close()
				}
				disarm := crashAt(ffs, n)
				var derr error
				if through == "handle" {
					derr = s.Delete()
				} else {
					derr = r.DeleteSession("", s.ID())
				}
				reached := disarm()
				s.Close()
				fresh := r2(t, r)
				if o, err := fresh.Open("", s.ID()); err == nil {
					wantMessages(t, o.Messages(), history(3)[:8])
					o.Close()
				} else if !errors.Is(err, ErrSessionNotFound) {
					t.Fatalf("crash before op %d: the session: %v", n, err)
				}
				f, err := fresh.Open("", forkID)
				if err != nil {
					t.Fatalf("crash before op %d of the deletion (%v): the rewind's fork: %v", n, derr, err)
				}
				wantMessages(t, f.Messages(), history(3))
				f.Close()
				if !reached {
					if derr != nil {
						t.Fatalf("no crash, delete: %v", derr)
					}
					if _, err := fresh.Open("", s.ID()); !errors.Is(err, ErrSessionNotFound) {
						t.Fatalf("deleted, the session opens: %v", err)
					}
					return
				}
			}
		})
	}
}

// A deletion that cannot move the rewind's waiting fork out of the
// session's directory is refused and changes nothing: the session and
// the fork inside it stay, and the next deletion that can move it goes
// on.
func TestADeletionThatCannotMoveTheWaitingForkIsRefused(t *testing.T) {
	for _, through := range []string{"handle", "root"} {
		t.Run(through, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s := storedWith(t, r, t.TempDir(), 3)
			ffs.Arm(func(op, path string) *storetest.Fault {
				if op == "rename" && strings.Contains(filepath.Base(path), forkDirPrefix) {
					return &storetest.Fault{Err: storetest.ErrInjected}
				}
				return nil
			})
			forkID, err := s.Rewind(8)
			if err != nil {
				t.Fatal(err)
			}
			del := func() error {
				if through == "handle" {
					return s.Delete()
				}
				return r.DeleteSession("", s.ID())
			}
			if through == "root" {
				s.Close()
			}
			if err := del(); err == nil {
				t.Fatal("deleted a session whose rewind's fork could not be moved out of it")
			}
			if !exists(r.fs, filepath.Join(s.Dir(), forkDirPrefix+forkID)) {
				t.Fatal("the refused deletion removed the waiting fork")
			}
			ffs.Arm(nil)
			if err := del(); err != nil {
				t.Fatal(err)
			}
			f, err := r2(t, r).Open("", forkID)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			wantMessages(t, f.Messages(), history(3))
		})
	}
}
