package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// newCheckpointSession is a session on disk and its file checkpoints.
func newCheckpointSession(t testing.TB) (*Root, *storetest.FaultFS, *Session, *FileCheckpoints) {
	t.Helper()
	r, ffs := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ck := s.FileCheckpoints()
	if ck == nil {
		t.Fatal("a session on disk has file checkpoints")
	}
	return r, ffs, s, ck
}

func fileStateOf(id string) FileState { return FileState{Exists: true, Mode: ModeFile, ID: id} }

func TestPreImagesReadBackWithTheirContent(t *testing.T) {
	_, _, _, ck := newCheckpointSession(t)
	a, err := ck.PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("alpha\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The same content again is kept once.
	b, err := ck.PreImage("run2", 4, "b.txt", fileStateOf("id-a"), []byte("alpha\n"))
	if err != nil || b.Off != a.Off {
		t.Fatalf("same content: %+v (first at %d) %v", b, a.Off, err)
	}
	if _, err := ck.PreImage("run2", 4, "gone.txt", FileState{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ck.EndRun(CheckpointRecord{RunID: "run2", Start: 4, End: 8, Files: []FileChange{{Path: "b.txt", Pre: b, Post: fileStateOf("id-b2")}}}); err != nil {
		t.Fatal(err)
	}
	recs, err := ck.Records()
	if err != nil || len(recs) != 4 {
		t.Fatalf("records: %+v %v", recs, err)
	}
	if recs[0].State != a || recs[1].State != b || recs[2].State.Exists || recs[3].Kind != CheckpointEnd || recs[3].Files[0].Pre != b {
		t.Fatalf("records: %+v", recs)
	}
	for _, st := range []FileState{a, b} {
		if got, err := ck.Content(st); err != nil || string(got) != "alpha\n" {
			t.Fatalf("content %q %v", got, err)
		}
	}
}

// A checkpoint write that fails (a torn append, a full disk, a failed
// fsync) leaves the log as it was: the next write follows the last whole
// record, and every record reads back.
func TestAFailedCheckpointWriteLeavesTheLogAsItWas(t *testing.T) {
	faults := []struct {
		name string
		op   string
		flt  storetest.Fault
	}{
		{"torn append", "write", storetest.Fault{Err: syscall.ENOSPC, Partial: 17}},
		{"failed write", "write", storetest.Fault{Err: storetest.ErrInjected}},
		{"failed fsync", "sync", storetest.Fault{Err: syscall.EIO}},
		{"open", "open", storetest.Fault{Err: syscall.EMFILE}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			_, ffs, _, ck := newCheckpointSession(t)
			if _, err := ck.PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("alpha\n")); err != nil {
				t.Fatal(err)
			}
			ffs.FailOnce(f.op, checkpointLogFile, f.flt)
			if _, err := ck.PreImage("run1", 0, "b.txt", fileStateOf("id-b"), []byte("beta\n")); err == nil {
				t.Fatal("the fault did not fail the write")
			}
			ffs.Arm(nil)
			c, err := ck.PreImage("run1", 0, "c.txt", fileStateOf("id-c"), []byte("gamma\n"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := ck.Records()
			if err != nil || len(recs) != 2 || recs[0].Path != "a.txt" || recs[1].Path != "c.txt" {
				t.Fatalf("records after the fault: %+v %v", recs, err)
			}
			if got, err := ck.Content(c); err != nil || string(got) != "gamma\n" {
				t.Fatalf("content after the fault: %q %v", got, err)
			}
		})
	}
}

func TestATornCheckpointTailIsCutWhenTheLogIsNextWritten(t *testing.T) {
	r, _, s, ck := newCheckpointSession(t)
	if _, err := ck.PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("alpha\n")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ck.Dir(), checkpointLogFile)
	whole, _ := os.ReadFile(path)
	// A crash in the middle of an append: half a line, then a line whose
	// content is short.
	for i, tail := range []string{`{"type":"pre","run":"run2","sta`, `{"type":"pre","run":"run2","start":0,"path":"b","state":{"exists":true},"inline":50,"crc":1}` + "\nxx"} {
		if err := os.WriteFile(path, append(bytes.Clone(whole), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		// A new handle (a new process) reads the log afresh.
		s.Close()
		s2, err := r.OpenDir(s.Dir())
		if err != nil {
			t.Fatal(err)
		}
		s = s2
		ck = s.FileCheckpoints()
		if recs, err := ck.Records(); err != nil || len(recs) != i+1 {
			t.Fatalf("records with a torn tail: %+v %v", recs, err)
		}
		if _, err := ck.PreImage("run3", 0, "c.txt", fileStateOf("id-c"), []byte("gamma\n")); err != nil {
			t.Fatal(err)
		}
		if recs, err := ck.Records(); err != nil || len(recs) != i+2 || recs[i+1].Path != "c.txt" {
			t.Fatalf("records after the next write: %+v %v", recs, err)
		}
		whole, _ = os.ReadFile(path)
	}
	s.Close()
}

func TestRewriteKeepsTheContentOfTheRecordsItKeeps(t *testing.T) {
	_, _, _, ck := newCheckpointSession(t)
	old, _ := ck.PreImage("run1", 0, "a.txt", fileStateOf("id-old"), []byte(strings.Repeat("o", 100)))
	a, _ := ck.PreImage("run2", 4, "a.txt", fileStateOf("id-a"), []byte("alpha\n"))
	b, _ := ck.PreImage("run2", 4, "b.txt", fileStateOf("id-a"), []byte("alpha\n"))
	ck.EndRun(CheckpointRecord{RunID: "run2", Start: 4, End: 6, Files: []FileChange{{Path: "a.txt", Pre: a, Post: fileStateOf("id-new")}, {Path: "b.txt", Pre: b}}})
	recs, _ := ck.Records()
	var keep []CheckpointRecord
	for _, r := range recs {
		if r.RunID != "run1" {
			keep = append(keep, r)
		}
	}
	if err := ck.Rewrite(keep, 0, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := ck.Records()
	if err != nil || len(recs) != 4 || recs[0].Kind != CheckpointDropped || recs[0].Start != 0 {
		t.Fatalf("rewritten: %+v %v", recs, err)
	}
	for _, st := range []FileState{recs[1].State, recs[2].State, recs[3].Files[0].Pre, recs[3].Files[1].Pre} {
		if got, err := ck.Content(st); err != nil || string(got) != "alpha\n" {
			t.Fatalf("content of %+v: %q %v", st, got, err)
		}
	}
	if size, _ := ck.Size(); size == 0 || old.Size != 100 {
		t.Fatal("empty log")
	}
}

func TestFileCheckpointsGoWithTheirSession(t *testing.T) {
	_, _, s, ck := newCheckpointSession(t)
	if _, err := ck.PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("alpha\n")); err != nil {
		t.Fatal(err)
	}
	dir := ck.Dir()
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the checkpoints outlived their session: %v", err)
	}
}

func TestAReadOnlySessionWritesNoCheckpoint(t *testing.T) {
	r, _, s, _ := newCheckpointSession(t)
	ro := reopen(t, r, s) // s holds the lock: the copy is read-only
	if _, err := ro.FileCheckpoints().PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("a")); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("a read-only session wrote a checkpoint: %v", err)
	}
}

// BenchmarkPreImage is a write or edit's pre-image of a 4 KiB file on
// its own: written and fsynced.
func BenchmarkPreImage(b *testing.B) {
	_, ffs, _, ck := newCheckpointSession(b)
	ffs.FS = fsys.OS{}
	content := bytes.Repeat([]byte("package main // a line of code\n"), 4096/32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ck.PreImage("run1", 0, "main.go", fileStateOf(fmt.Sprint(i)), content); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreImageBesideToolStart is what write and edit add to a call
// (target: under 1 ms; docs/performance.md): the tool's start record
// alone, and with the pre-image of a 4 KiB file written and fsynced
// beside it, as the engine does (engine/filecheckpoint.go, beforeTool).
// The difference of the two is the pre-image's cost.
func BenchmarkPreImageBesideToolStart(b *testing.B) {
	r, _, s, ck := newCheckpointSession(b)
	r.fs = fsys.OS{}
	round := prompt(0)
	j, err := s.BeginJournal(JournalBegin{RunID: "bench", User: &round[0]})
	if err != nil {
		b.Fatal(err)
	}
	content := bytes.Repeat([]byte("package main // a line of code\n"), 4096/32)
	b.Run("tool start alone", func(b *testing.B) {
		for range b.N {
			if err := j.ToolStart(1, 0, "call-0", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool start and pre-image", func(b *testing.B) {
		for i := range b.N {
			done := make(chan error)
			go func() {
				_, err := ck.PreImage("run1", 0, "main.go", fileStateOf(fmt.Sprint(i)), content)
				done <- err
			}()
			if err := j.ToolStart(1, 0, "call-0", 1); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A handle that let go of its lock (letgo.go) reads the checkpoint log
// again when it next writes: another process may have appended to it
// meanwhile, and writing at the old end would overwrite its records.
func TestCheckpointsWrittenByAnotherWriterWhileLetGoAreKept(t *testing.T) {
	r, _ := newTestRoot(t)
	a, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustCommit(t, a, history(1), nil, nil)
	if _, err := a.FileCheckpoints().PreImage("run1", 0, "a.txt", fileStateOf("id-a"), []byte("alpha\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.LetGo(); err != nil {
		t.Fatal(err)
	}
	b, err := openRoot(t, r.Dir()).Open("", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := b.FileCheckpoints().PreImage("run2", 2, "b.txt", fileStateOf("id-b"), []byte("bravo\n"))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := a.Relock(); err != nil {
		t.Fatal(err)
	}
	ck := a.FileCheckpoints()
	mine, err := ck.PreImage("run3", 4, "c.txt", fileStateOf("id-c"), []byte("charlie\n"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ck.Records()
	if err != nil || len(recs) != 3 || recs[1].RunID != "run2" || recs[2].RunID != "run3" {
		t.Fatalf("records: %+v %v", recs, err)
	}
	for st, want := range map[FileState]string{theirs: "bravo\n", mine: "charlie\n"} {
		if got, err := ck.Content(st); err != nil || string(got) != want {
			t.Fatalf("content %q %v, want %q", got, err, want)
		}
	}
}
