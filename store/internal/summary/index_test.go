package summary

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
)

// osFS is the real file system as an fsys.FS; fail, when set, fails the
// operations it names on the index file.
type osFS struct {
	fsys.OS
	mu   sync.Mutex
	fail map[string]bool // "open", "write", "sync", "remove", "lockshared"
}

func (f *osFS) failing(op, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail[op] && (op == "lockshared" || strings.HasSuffix(name, FileName))
}

func (f *osFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if f.failing("open", name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	h, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{File: h, fs: f, name: name}, nil
}

func (f *osFS) RemoveAll(name string) error {
	if f.failing("remove", name) {
		return syscall.EIO
	}
	return os.RemoveAll(name)
}

func (f *osFS) LockShared(dir string) (io.Closer, error) {
	if f.failing("lockshared", dir) {
		return nil, syscall.EIO
	}
	return f.OS.LockShared(dir)
}

type file struct {
	*os.File
	fs   *osFS
	name string
}

func (h *file) Write(b []byte) (int, error) {
	if h.fs.failing("write", h.name) {
		return 0, syscall.EIO
	}
	return h.File.Write(b)
}

func (h *file) Sync() error {
	if h.fs.failing("sync", h.name) {
		return syscall.EIO
	}
	return h.File.Sync()
}

const (
	idA = "01a23163-27df-7997-8a87-ec43f87ea10a"
	idB = "01a23163-27df-7997-8a87-ec43f87ea10b"
)

// newIndex returns an index over a new scope directory that holds an
// empty index file.
func newIndex(t *testing.T) (Index, *osFS, string) {
	t.Helper()
	fs := &osFS{}
	x := Index{FS: fs, Marks: NewMarks()}
	sd := t.TempDir()
	p := x.Prepare(sd)
	if p == nil {
		t.Fatal("Prepare refused an idle scope")
	}
	p.Finish(nil, nil)
	return x, fs, sd
}

func claimsOf(t *testing.T, x Index, sd string, names ...string) []Claim {
	t.Helper()
	claims, _, ok := x.Claims(sd, names)
	if !ok {
		t.Fatal("the index is not readable")
	}
	return claims
}

// A move announces a loose claim covering the old and new header, durable
// before the publish, and confirms the exact one after it; a publish that
// failed leaves the loose claim, still an upper bound.
func TestAMoveIsAnnouncedLooseAndConfirmedExact(t *testing.T) {
	for _, published := range []bool{true, false} {
		x, _, sd := newIndex(t)
		old := Record{ID: idA, UpdatedAt: 100, HasUserMessage: true}
		next := Record{ID: idA, UpdatedAt: 50, Archived: true}
		tx := x.Begin(sd, idA, &old, next)
		tx.Ready()
		loose := Claim{State: Loose, Flags: InUnarchived | InArchived, UpdatedAt: 100}
		if got := claimsOf(t, x, sd, idA)[0]; got != loose {
			t.Fatalf("announced %+v, want %+v", got, loose)
		}
		tx.Done(published)
		want := loose
		if published {
			want = ClaimOf(next)
		}
		if got := claimsOf(t, x, sd, idA)[0]; got != want {
			t.Fatalf("published=%v: claim %+v, want %+v", published, got, want)
		}
	}
}

// A change that keeps the claim (a title, a pin) writes nothing.
func TestAChangeThatKeepsTheClaimWritesNothing(t *testing.T) {
	x, _, sd := newIndex(t)
	rec := Record{ID: idA, UpdatedAt: 7, HasUserMessage: true}
	if tx := x.Begin(sd, idA, &rec, rec); tx != nil {
		t.Fatal("a change that keeps the claim began a record")
	}
}

// A failed record never reaches the caller: the index is removed, or the
// scope marked stale when it cannot be, so that readers rebuild it.
func TestAFailedRecordRemovesTheIndexOrMarksTheScope(t *testing.T) {
	for _, op := range []string{"lockshared", "open", "write", "sync"} {
		for _, removeFails := range []bool{false, true} {
			x, fs, sd := newIndex(t)
			fs.fail = map[string]bool{op: true, "remove": removeFails}
			old := Record{ID: idA, UpdatedAt: 1, HasUserMessage: true}
			tx := x.Begin(sd, idA, &old, Record{ID: idA, UpdatedAt: 2, HasUserMessage: true})
			tx.Ready()
			tx.Done(true)
			fs.fail = nil
			_, statErr := os.Stat(filepath.Join(sd, FileName))
			_, stale := x.Marks.Stale(sd)
			if !errors.Is(statErr, os.ErrNotExist) && !stale {
				t.Errorf("%s, removeFails=%v: the index stays and the scope is not marked", op, removeFails)
			}
			if _, _, ok := x.Claims(sd, []string{idA}); ok {
				t.Errorf("%s, removeFails=%v: the index is still trusted", op, removeFails)
			}
		}
	}
}

// A rebuild keeps the records writers append while it reads the headers:
// theirs are newer than what it read.
func TestRebuildKeepsRecordsAppendedMeanwhile(t *testing.T) {
	x, _, sd := newIndex(t)
	p := x.Prepare(sd)
	read := []Record{{ID: idA, UpdatedAt: 10, HasUserMessage: true}, {ID: idB, UpdatedAt: 20, HasUserMessage: true}}
	// After the headers were read, idA moves.
	old := read[0]
	tx := x.Begin(sd, idA, &old, Record{ID: idA, UpdatedAt: 30, HasUserMessage: true})
	tx.Ready()
	tx.Done(true)
	p.Finish(read, []NotSession{{Name: "not-a-session"}, {Name: "01a23163-27df-7997-8a87-ec43f87ea10c", Malformed: true}})
	got := claimsOf(t, x, sd, idA, idB, "01a23163-27df-7997-8a87-ec43f87ea10c")
	want := []Claim{
		{State: Exact, Flags: InUnarchived, UpdatedAt: 30},
		{State: Exact, Flags: InUnarchived, UpdatedAt: 20},
		{State: Malformed},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("claim %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A rebuild clears a stale mark only if no failure came after it began.
func TestRebuildClearsOnlyTheStaleMarkItSaw(t *testing.T) {
	x, _, sd := newIndex(t)
	x.Marks.MarkStale(sd)
	p := x.Prepare(sd)
	x.Marks.MarkStale(sd) // a failure while the headers are read
	p.Finish(nil, nil)
	if _, stale := x.Marks.Stale(sd); !stale {
		t.Fatal("a rebuild cleared a mark set after it began")
	}
	x.Prepare(sd).Finish(nil, nil)
	if _, stale := x.Marks.Stale(sd); stale {
		t.Fatal("a full rebuild left the mark")
	}
}

// An unterminated last line is a write in progress while a writer holds
// the scope's lock, and damage once none does.
func TestATornLastLineIsTrustedOnlyWhileAWriterHoldsTheLock(t *testing.T) {
	x, fs, sd := newIndex(t)
	path := filepath.Join(sd, FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := AppendLine(nil, idA, Claim{State: Exact, Flags: InUnarchived, UpdatedAt: 5})
	f.Write(line[:len(line)-3])
	f.Close()
	lock, err := fs.LockShared(sd)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := x.Claims(sd, []string{idA}); !ok {
		t.Error("a line being written made the index untrusted")
	}
	lock.Close()
	if _, _, ok := x.Claims(sd, []string{idA}); ok {
		t.Error("a cut line with no writer left the index trusted")
	}
}

// Adopting names the index does not know records what read says of each
// session name, and nothing for a name no record can hold.
func TestAdoptRecordsTheClaimsOfUnknownNames(t *testing.T) {
	x, _, sd := newIndex(t)
	var asked []string
	x.Adopt(sd, []string{idA, "not-a-session", idB}, func(name string) (Claim, bool) {
		asked = append(asked, name)
		if name == idB {
			return Claim{}, false
		}
		return Claim{State: Other}, true
	})
	if strings.Join(asked, ",") != idA+","+idB {
		t.Fatalf("read asked for %v", asked)
	}
	got := claimsOf(t, x, sd, idA, idB)
	if got[0] != (Claim{State: Other}) || got[1] != (Claim{}) {
		t.Fatalf("claims %+v", got)
	}
}
