package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// Regression tests for the store review (docs/storage.md has the rules
// they hold).

// corruptHeader rewrites a closed session's header.json through edit.
func corruptHeader(t *testing.T, s *Session, edit func(*Header)) {
	t.Helper()
	hp := filepath.Join(s.Dir(), headerFile)
	b, err := os.ReadFile(hp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(b, hp)
	if err != nil {
		t.Fatal(err)
	}
	edit(&h)
	var enc headerEncoder
	nb, err := enc.encode(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, nb, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A corrupt header count is ErrMalformed for Rounds, ReadMessages and
// Open: never a panic, an overflow or an allocation the files cannot back.
func TestRegressionCorruptCountsAreMalformed(t *testing.T) {
	for name, edit := range map[string]func(*Header){
		"overflowing count": func(h *Header) { h.MessageCount, h.MessagesBytes = 1<<60, 3<<60 },
		"count past index":  func(h *Header) { h.MessageCount, h.MessagesBytes = 1<<40, 3<<40 },
		"largest count": func(h *Header) {
			h.MessageCount, h.MessagesBytes = int(^uint(0)>>1), 1<<63-1
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(1), nil, nil)
			s.Close()
			corruptHeader(t, s, edit)
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			if _, err := r.Rounds("", s.ID()); !errors.Is(err, ErrMalformed) {
				t.Fatalf("rounds: %v", err)
			}
			if _, err := r.ReadMessages("", s.ID(), 0, 1000); !errors.Is(err, ErrMalformed) {
				t.Fatalf("read messages past the index: %v", err)
			}
			if _, err := r.Open("", s.ID()); !errors.Is(err, ErrMalformed) {
				t.Fatalf("open: %v", err)
			}
		})
	}
}

// An index record pointing far past the log, inside a corrupt committed
// range, is ErrMalformed before ReadMessages allocates for it.
func TestRegressionReadMessagesCorruptOffset(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	corruptHeader(t, s, func(h *Header) { h.MessagesBytes = 1 << 50 })
	ip := filepath.Join(s.Dir(), indexFile)
	idx, _ := os.ReadFile(ip)
	binary.LittleEndian.PutUint64(idx[indexRecordSize:], 1<<49) // record 1's offset
	os.WriteFile(ip, idx, 0o600)
	if _, err := r.ReadMessages("", s.ID(), 1, 2); !errors.Is(err, ErrMalformed) {
		t.Fatalf("read messages: %v", err)
	}
}

// Two writers of one settings file at once (no lock between them): every
// version a reader sees is one whole write, and no temporary file is left.
func TestRegressionWriteFileAtomicConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	// Different sizes: a torn mix is then visible as a length or a byte.
	contents := [][]byte{bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 128<<10), bytes.Repeat([]byte("c"), 64<<10)}
	whole := func(got []byte) bool {
		return slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(got, c) })
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(contents))
	for _, c := range contents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := WriteFileAtomic(p, c, 0o600); err != nil {
					errs <- err
					return
				}
				got, err := os.ReadFile(p)
				if err != nil || !whole(got) {
					errs <- fmt.Errorf("read a torn version (%d bytes): %v", len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left %v", entries)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// ensureDir fsyncs the parent also when the directory exists already, or
// another creator made it between Stat and Mkdir: that creator may not
// have fsynced it yet.
func TestRegressionEnsureDirSyncsParentOfExistingDir(t *testing.T) {
	_, ffs := newTestRoot(t)
	parent := t.TempDir()
	existing := filepath.Join(parent, "existing")
	os.Mkdir(existing, 0o700)
	raced := filepath.Join(parent, "raced")
	ffs.arm(func(op, p string) *fault {
		if op == "mkdir" && p == raced {
			os.Mkdir(p, 0o700) // another process wins the race
			return &fault{err: &os.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}}
		}
		return nil
	})
	for _, d := range []string{existing, raced} {
		ffs.log = nil
		if err := ensureDir(ffs, d); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ffs.log, "syncdir "+filepath.Base(parent)) {
			t.Fatalf("%s: parent not fsynced: %v", filepath.Base(d), ffs.log)
		}
	}
}
