package store

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/store/internal/storetest"
)

// A write holds the write queue across its fsyncs, which on a busy disk
// take long. Reads used to take the same mutex, so the engine, reading a
// session's header for a snapshot, waited for that session's commit to
// reach the disk. Each write below blocks at its first fsync (a fault
// hook that never fails) until the reads have returned; a read that
// waited for the write would never return, and a watchdog fails the test.
func TestReadsDoNotWaitForAWritesDiskIO(t *testing.T) {
	writes := []struct {
		name  string
		write func(s *Session) error
	}{
		{"commit", func(s *Session) error { return s.Commit(history(2), nil, nil) }},
		{"metadata", func(s *Session) error { return s.SaveMeta(func(h *Header) { h.Title = "t" }) }},
		{"pin", func(s *Session) error { _, err := s.SetPinned(true); return err }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Commit(history(1), nil, nil); err != nil {
				t.Fatal(err)
			}
			entered := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			// Before the deferred Close, which waits for the write.
			defer unblock()
			blocked := false
			ffs.Arm(func(op, path string) *storetest.Fault {
				if !blocked && (op == "sync" || op == "syncdir") && !strings.HasSuffix(path, ".lock") {
					blocked = true
					close(entered)
					<-release
				}
				return nil
			})
			done := make(chan error, 1)
			go func() { done <- w.write(s) }()
			<-entered

			read := make(chan struct{})
			go func() {
				defer close(read)
				if h := s.Header(); h.MessageCount != 4 {
					t.Errorf("header during the write names %d messages", h.MessageCount)
				}
				if n := len(s.Messages()); n != 4 {
					t.Errorf("%d messages during the write", n)
				}
				_ = s.Summary()
				_ = s.Runtime()
				_ = s.IsDraft()
			}()
			select {
			case <-read:
			case <-time.After(30 * time.Second):
				t.Fatal("a read waited for the write's fsync")
			}
			unblock()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			ffs.Arm(nil)
		})
	}
}
