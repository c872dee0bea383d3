package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
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
	nb, err := encodeHeader(&h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, nb, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A corrupt header count is ErrMalformed for Rounds, ReadMessages and
// Open: never a panic, an overflow or an allocation the files cannot back.
func TestCorruptCountsAreMalformed(t *testing.T) {
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
func TestReadMessagesCorruptOffset(t *testing.T) {
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
func TestWriteFileAtomicConcurrentWriters(t *testing.T) {
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

// fsys.EnsureDir fsyncs the parent also when the directory exists already, or
// another creator made it between Stat and Mkdir: that creator may not
// have fsynced it yet.
func TestEnsureDirSyncsParentOfExistingDir(t *testing.T) {
	_, ffs := newTestRoot(t)
	parent := t.TempDir()
	existing := filepath.Join(parent, "existing")
	os.Mkdir(existing, 0o700)
	raced := filepath.Join(parent, "raced")
	ffs.Arm(func(op, p string) *storetest.Fault {
		if op == "mkdir" && p == raced {
			os.Mkdir(p, 0o700) // another process wins the race
			return &storetest.Fault{Err: &os.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}}
		}
		return nil
	})
	for _, d := range []string{existing, raced} {
		ffs.ResetOps()
		if err := fsys.EnsureDir(ffs, d); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ffs.Ops(), "syncdir "+filepath.Base(parent)) {
			t.Fatalf("%s: parent not fsynced: %v", filepath.Base(d), ffs.Ops())
		}
	}
}

// failFirstCommitVisibly makes s's first commit fail after its directory
// became visible and could not be taken back (scope fsync and the rename
// back fail): the orphan case.
func failFirstCommitVisibly(t *testing.T, ffs *storetest.FaultFS, s *Session) {
	t.Helper()
	os.MkdirAll(filepath.Dir(s.Dir()), 0o700)
	renames := 0
	ffs.Arm(func(op, p string) *storetest.Fault {
		switch {
		case op == "syncdir" && strings.HasSuffix(p, globalScope):
			return &storetest.Fault{Err: syscall.EIO}
		case op == "rename":
			renames++
			if renames == 2 { // the rename back
				return &storetest.Fault{Err: syscall.EIO}
			}
		}
		return nil
	})
	if err := s.Commit(history(1), nil, nil); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first commit: %v", err)
	}
	ffs.Arm(nil)
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Fatalf("no orphan: %v", err)
	}
}

// scopeEntries lists a scope directory's names.
func scopeEntries(t *testing.T, s *Session) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A directory left visible by a failed first commit stays locked by its
// draft: no other handle writes history into it, so the draft's retry (or
// Delete), which removes it, never destroys acknowledged history.
func TestOrphanStaysLockedUntilRemoved(t *testing.T) {
	t.Run("retry", func(t *testing.T) {
		r, ffs := newTestRoot(t)
		s := r.Draft("", t.TempDir())
		defer s.Close()
		failFirstCommitVisibly(t, ffs, s)
		r2, _ := OpenRoot(r.Dir())
		o, err := r2.Open("", s.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !o.ReadOnly() {
			t.Fatal("another handle may write into the orphan")
		}
		if err := o.Commit(history(3), nil, nil); !errors.Is(err, ErrSessionLocked) {
			t.Fatalf("other handle's commit: %v", err)
		}
		o.Close()
		mustCommit(t, s, history(2), nil, nil)
		if got := scopeEntries(t, s); len(got) != 1 || got[0] != s.ID() {
			t.Fatalf("scope holds %v", got)
		}
		wantMessages(t, reopen(t, r, s).Messages(), history(2))
	})
	t.Run("delete", func(t *testing.T) {
		r, ffs := newTestRoot(t)
		s := r.Draft("", t.TempDir())
		failFirstCommitVisibly(t, ffs, s)
		if err := s.Delete(); err != nil {
			t.Fatal(err)
		}
		if got := scopeEntries(t, s); len(got) != 0 {
			t.Fatalf("scope holds %v", got)
		}
	})
	t.Run("close releases", func(t *testing.T) {
		r, ffs := newTestRoot(t)
		s := r.Draft("", t.TempDir())
		failFirstCommitVisibly(t, ffs, s)
		s.Close()
		o, err := r.Open("", s.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if o.ReadOnly() {
			t.Fatal("closed draft kept the orphan's lock")
		}
	})
}

// A listed session that cannot be opened (its cwd vanished, its logs are
// malformed) can still be archived, unarchived and deleted through the
// root, which reads neither the logs nor the cwd.
func TestRootDeleteAndArchiveUnopenable(t *testing.T) {
	for name, breakIt := range map[string]func(s *Session, cwd string){
		"cwd missing":    func(s *Session, cwd string) { os.RemoveAll(cwd) },
		"malformed logs": func(s *Session, cwd string) { os.Truncate(filepath.Join(s.Dir(), messagesFile), 5) },
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			cwd := filepath.Join(t.TempDir(), "w")
			os.Mkdir(cwd, 0o700)
			s, _ := r.Create("", cwd)
			mustCommit(t, s, history(1), nil, nil)
			s.Close()
			breakIt(s, cwd)
			if _, err := r.Open("", s.ID()); err == nil {
				t.Fatal("opened")
			}
			before := snapshotDir(t, s.Dir())
			hdr, _ := r.ReadHeader("", s.ID())
			if err := r.SetSessionArchived("", s.ID(), true); err != nil {
				t.Fatal(err)
			}
			if sums, _ := r.List("", ListOptions{}); len(sums) != 0 {
				t.Fatalf("still listed: %v", sums)
			}
			if sums, _ := r.List("", ListOptions{Archived: true}); len(sums) != 1 || sums[0].ID != s.ID() {
				t.Fatalf("archived list %v", sums)
			}
			got, _ := r.ReadHeader("", s.ID())
			if got.ArchivedAt == nil {
				t.Fatal("not archived")
			}
			got.ArchivedAt = nil
			if !reflect.DeepEqual(got, hdr) {
				t.Fatalf("header changed beyond archivedAt:\n%+v\n%+v", got, hdr)
			}
			if err := r.SetSessionArchived("", s.ID(), false); err != nil {
				t.Fatal(err)
			}
			after := snapshotDir(t, s.Dir())
			if !reflect.DeepEqual(before, after) {
				t.Fatal("archive and unarchive did not restore the files")
			}
			if err := r.DeleteSession("", s.ID()); err != nil {
				t.Fatal(err)
			}
			if got := scopeEntries(t, s); len(got) != 0 {
				t.Fatalf("scope holds %v", got)
			}
			if err := r.DeleteSession("", s.ID()); !errors.Is(err, ErrSessionNotFound) {
				t.Fatalf("second delete: %v", err)
			}
		})
	}
}

// The root-level writes respect the session lock and other formats.
func TestRootDeleteAndArchiveRules(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, nil)
	if err := r.DeleteSession("", s.ID()); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("delete of an open session: %v", err)
	}
	if err := r.SetSessionArchived("", s.ID(), true); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("archive of an open session: %v", err)
	}
	s.Close()

	hp := filepath.Join(s.Dir(), headerFile)
	b, _ := os.ReadFile(hp)
	os.WriteFile(hp, bytes.Replace(b, []byte(`"version":1`), []byte(`"version":3`), 1), 0o600)
	before := snapshotDir(t, s.Dir())
	if err := r.SetSessionArchived("", s.ID(), true); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("archive of another version: %v", err)
	}
	if err := r.DeleteSession("", s.ID()); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("delete of another version: %v", err)
	}
	if !reflect.DeepEqual(before, snapshotDir(t, s.Dir())) {
		t.Fatal("another version's files changed")
	}
	for _, id := range []string{newID(), "../x"} {
		if err := r.DeleteSession("", id); !errors.Is(err, ErrSessionNotFound) {
			t.Fatalf("delete of %q: %v", id, err)
		}
	}
}

// A root-level archive that fails at any step of the header replace leaves
// the previous header, as a failed SetArchived does.
func TestRootArchiveFaults(t *testing.T) {
	for _, op := range []string{"open", "write", "sync", "rename", "syncdir"} {
		t.Run(op, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(1), nil, nil)
			s.Close()
			before := snapshotDir(t, s.Dir())
			ffs.FailOnce(op, "", storetest.Fault{Err: syscall.EIO})
			if err := r.SetSessionArchived("", s.ID(), true); !errors.Is(err, syscall.EIO) {
				t.Fatalf("err %v", err)
			}
			ffs.Arm(nil)
			after := snapshotDir(t, s.Dir())
			if after[headerFile] != before[headerFile] {
				t.Fatal("header changed")
			}
		})
	}
}

// List reads a header larger than its 16 KB head once, without the prompt
// timings, and still gets exactly what Open sees; a header it cannot
// decide from the head and the end is read whole. (Headers hold timings
// only as written before timings.jsonl.)
func TestListLargeHeaders(t *testing.T) {
	r, ffs := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, func(h *Header) { h.Title = "large" })
	s.Close()
	var legacy []PromptTiming
	for i := range 1000 {
		legacy = append(legacy, PromptTiming{ID: fmt.Sprintf("t%d", i), StartedAt: int64(i), FinishedAt: Some(int64(i + 1000))})
	}
	hp := filepath.Join(s.Dir(), headerFile)
	h := s.Header()
	orig, err := encodeHeader(&h, legacy)
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) < 4*listHeadSize {
		t.Fatalf("header of %d bytes", len(orig))
	}
	i := bytes.Index(orig, timingsKey)
	timings := orig[i+1 : bytes.LastIndexByte(orig, '}')] // "promptTimings":[...]
	pre := orig[:i]

	list := func(t *testing.T) ([]Summary, error) {
		t.Helper()
		ffs.ResetOps()
		return r.List("", ListOptions{})
	}
	reads := func() int {
		n := 0
		for _, e := range ffs.Ops() {
			if e == "read "+headerFile {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name    string
		data    []byte
		title   string
		reads   int
		badFile bool
	}{
		{"as Loop writes it", orig, "large", 1, false},
		{"member after the timings", []byte(string(pre) + "," + string(timings) + `,"title":"after"}` + "\n"), "after", 2, false},
		{"nested key first", bytes.Replace(orig, []byte(`"title":"large"`), []byte(`"title":"large","x":{"a":1,"promptTimings":[1]}`), 1), "large", 2, false},
		{"key past the head", bytes.Replace(orig, []byte(`"title":"large"`), []byte(`"title":"`+strings.Repeat("l", 2*listHeadSize)+`"`), 1), strings.Repeat("l", 2*listHeadSize), 2, false},
		{"malformed before the timings", bytes.Replace(orig, []byte(`"unread":false`), []byte(`"unread":"yes"`), 1), "", 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(hp, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			sums, err := list(t)
			if n := reads(); n != c.reads {
				t.Fatalf("%d reads of the header, want %d", n, c.reads)
			}
			if c.badFile {
				if !errors.Is(err, ErrMalformed) || len(sums) != 0 {
					t.Fatalf("list %v, %v", sums, err)
				}
			} else {
				if err != nil || len(sums) != 1 || sums[0].Title != c.title {
					t.Fatalf("list %+v, %v", sums, err)
				}
				h, err := r.ReadHeader("", s.ID())
				if err != nil || !reflect.DeepEqual(h.Summary(), sums[0]) {
					t.Fatalf("list and a full decode disagree (%v):\n%+v\n%+v", err, sums[0], h.Summary())
				}
			}
		})
	}
}
