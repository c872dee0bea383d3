package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// commitFaults fail one durability step of a commit on a session on disk.
var commitFaults = []struct {
	name   string
	op     string // storetest.FaultFS operation
	suffix string // path suffix it applies to
	flt    storetest.Fault
	always bool // keep failing until disarmed (the restore attempt fails too)
	// tail: an earlier failed commit left an unpublished tail, so this
	// commit first truncates it (the step the fault hits).
	tail bool
}{
	{"append messages", "write", messagesFile, storetest.Fault{Err: storetest.ErrInjected}, false, false},
	{"torn append (half a line written)", "write", messagesFile, storetest.Fault{Err: storetest.ErrInjected, Partial: 37}, false, false},
	{"full disk (ENOSPC mid-append)", "write", messagesFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 100}, false, false},
	{"append index", "write", indexFile, storetest.Fault{Err: storetest.ErrInjected, Partial: 5}, false, false},
	{"append runtime", "write", runtimeFile, storetest.Fault{Err: syscall.ENOSPC}, false, false},
	{"fsync messages", "sync", messagesFile, storetest.Fault{Err: syscall.EIO}, false, false},
	{"fsync index", "sync", indexFile, storetest.Fault{Err: syscall.EIO}, false, false},
	{"fsync runtime", "sync", runtimeFile, storetest.Fault{Err: syscall.EIO}, false, false},
	{"append timings", "write", timingsFile, storetest.Fault{Err: storetest.ErrInjected}, false, false},
	{"torn timings append (half a record written)", "write", timingsFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 23}, false, false},
	{"fsync timings", "sync", timingsFile, storetest.Fault{Err: syscall.EIO}, false, false},
	{"create temp header", "open", headerFile + ".tmp", storetest.Fault{Err: syscall.ENOSPC}, false, false},
	{"temp header write (torn)", "write", headerFile + ".tmp", storetest.Fault{Err: syscall.ENOSPC, Partial: 20}, false, false},
	{"temp header fsync", "sync", headerFile + ".tmp", storetest.Fault{Err: syscall.EIO}, false, false},
	{"rename header", "rename", headerFile + ".tmp", storetest.Fault{Err: syscall.EIO}, false, false},
	{"fsync session dir after rename", "syncdir", "", storetest.Fault{Err: syscall.EIO}, false, false},
	{"fsync session dir, restore fails too", "syncdir", "", storetest.Fault{Err: syscall.EIO}, true, false},
	{"truncate the unpublished tail on retry", "truncate", messagesFile, storetest.Fault{Err: syscall.EIO}, false, true},
	{"truncate the unpublished timings tail on retry", "truncate", timingsFile, storetest.Fault{Err: syscall.EIO}, false, true},
}

// faultTiming is a prompt timing of the fault tests: timing n started, or
// finished.
func faultTiming(n int, finished bool) PromptTiming {
	t := PromptTiming{ID: fmt.Sprintf("t%d", n), UserMessageIndex: n, MessageStartIndex: Some(2 * n), StartedAt: int64(10 * n)}
	if finished {
		t.MessageEndIndex, t.FinishedAt = Some(2*n+2), Some(int64(10*n+5))
	}
	return t
}

func wantTimings(t testing.TB, what string, got []PromptTiming, want ...PromptTiming) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s timings:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestCommitFaultInjection(t *testing.T) {
	for _, fc := range commitFaults {
		t.Run(fc.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			prev := history(2)
			prevRT := []RuntimeRecord{rtRecord("compaction", 1)}
			mustCommit(t, s, prev, prevRT, func(h *Header) { h.Unread = true }, TimingAt{0, faultTiming(0, false)})
			prevHdr := s.Header()

			next := history(4)
			nextRT := []RuntimeRecord{rtRecord("compaction", 2), rtRecord("other", 3)}
			edit := func(h *Header) { h.Title = "after" }
			// The commit replaces timing 0 and appends timing 1.
			nextTm := []TimingAt{{0, faultTiming(0, true)}, {1, faultTiming(1, false)}}
			if fc.tail {
				leaveTail(t, s, ffs)
			}
			if fc.always {
				ffs.Arm(func(op, p string) *storetest.Fault {
					if op == fc.op && strings.HasSuffix(p, fc.suffix) {
						return &fc.flt
					}
					return nil
				})
			} else {
				ffs.FailOnce(fc.op, fc.suffix, fc.flt)
			}
			err = s.Commit(next, nextRT, edit, nextTm...)
			if !errors.Is(err, fc.flt.Err) {
				t.Fatalf("commit error %v, want %v", err, fc.flt.Err)
			}
			ffs.Arm(nil)

			// Nothing committed changed: in memory ...
			wantMessages(t, s.Messages(), prev)
			if h := s.Header(); h.Title != prevHdr.Title || h.MessagesBytes != prevHdr.MessagesBytes || h.RuntimeCount != 1 || h.TimingsBytes != prevHdr.TimingsBytes {
				t.Fatalf("memory header changed: %+v", h)
			}
			wantTimings(t, "memory", s.Timings(), faultTiming(0, false))
			// ... and for a reader of the files.
			o := reopen(t, r, s)
			wantMessages(t, o.Messages(), prev)
			if len(o.Runtime()) != 1 || o.Header().Title != "" || o.Header().MessagesBytes != prevHdr.MessagesBytes {
				t.Fatalf("disk shows %+v", o.Header())
			}
			wantTimings(t, "disk", o.Timings(), faultTiming(0, false))
			o.Close()

			// A retry with the same arguments commits everything once.
			if err := s.Commit(next, nextRT, edit, nextTm...); err != nil {
				t.Fatalf("retry: %v", err)
			}
			// And the next commit loses nothing.
			last := history(5)
			mustCommit(t, s, last, []RuntimeRecord{rtRecord("x", 4)}, nil, TimingAt{1, faultTiming(1, true)})
			o = reopen(t, r, s)
			wantMessages(t, o.Messages(), last)
			wantMessages(t, s.Messages(), last)
			wantTimings(t, "reopened", o.Timings(), faultTiming(0, true), faultTiming(1, true))
			wantTimings(t, "memory", s.Timings(), faultTiming(0, true), faultTiming(1, true))
			if h := o.Header(); h.TimingsCount != 4 {
				t.Fatalf("%d timing records, want 4 (one per write, none twice)", h.TimingsCount)
			}
			if rt := o.Runtime(); len(rt) != 4 || rt[1].Type != "compaction" || rt[2].Type != "other" || rt[3].Type != "x" {
				t.Fatalf("runtime after retry %v", rt)
			}
			if h := o.Header(); h.Title != "after" || h.UserMessageCount != 5 || !h.Unread {
				t.Fatalf("header after retry %+v", h)
			}
			for _, name := range []string{messagesFile, indexFile, runtimeFile, timingsFile} {
				fi, _ := os.Stat(filepath.Join(s.Dir(), name))
				want := map[string]int64{messagesFile: o.Header().MessagesBytes, indexFile: 20 * indexRecordSize, runtimeFile: o.Header().RuntimeBytes, timingsFile: o.Header().TimingsBytes}[name]
				if fi.Size() != want {
					t.Fatalf("%s has %d bytes, committed %d", name, fi.Size(), want)
				}
			}
		})
	}
}

// leaveTail makes a commit fail after its messages and a timing were
// appended (their fsync), so the logs end in bytes no header names; the
// next commit must truncate them first.
func leaveTail(t *testing.T, s *Session, ffs *storetest.FaultFS) {
	t.Helper()
	var before []int64
	for _, name := range []string{messagesFile, timingsFile} {
		fi, _ := os.Stat(filepath.Join(s.Dir(), name))
		before = append(before, fi.Size())
	}
	ffs.FailOnce("sync", messagesFile, storetest.Fault{Err: syscall.EIO})
	if err := s.Commit(history(3), nil, nil, TimingAt{len(s.Timings()), faultTiming(9, true)}); err == nil {
		t.Fatal("the commit meant to leave a tail succeeded")
	}
	ffs.Arm(nil)
	for i, name := range []string{messagesFile, timingsFile} {
		if after, _ := os.Stat(filepath.Join(s.Dir(), name)); after.Size() <= before[i] {
			t.Fatalf("no unpublished tail in %s: %d bytes before, %d after", name, before[i], after.Size())
		}
	}
}

// A crash between a failed commit and its retry: the previous committed
// range must open intact whatever the failure left behind.
func TestCommitFaultThenCrash(t *testing.T) {
	for _, fc := range commitFaults {
		t.Run(fc.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(2), nil, nil, TimingAt{0, faultTiming(0, false)})
			if fc.tail {
				leaveTail(t, s, ffs)
			}
			ffs.FailOnce(fc.op, fc.suffix, fc.flt)
			if err := s.Commit(history(4), []RuntimeRecord{rtRecord("r", 1)}, nil, TimingAt{0, faultTiming(0, true)}, TimingAt{1, faultTiming(1, false)}); err == nil {
				t.Fatal("fault not injected")
			}
			ffs.Arm(nil)
			s.Close() // the process dies: only the files remain
			o, err := r.Open("", s.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			wantMessages(t, o.Messages(), history(2))
			wantTimings(t, "after the crash", o.Timings(), faultTiming(0, false))
			mustCommit(t, o, history(3), nil, nil, TimingAt{1, faultTiming(1, true)})
			again := reopen(t, r, o)
			wantMessages(t, again.Messages(), history(3))
			wantTimings(t, "after the next commit", again.Timings(), faultTiming(0, false), faultTiming(1, true))
		})
	}
}

func TestSaveMetaFaultInjection(t *testing.T) {
	for _, fc := range commitFaults {
		if fc.suffix != headerFile+".tmp" && fc.op != "syncdir" {
			continue
		}
		t.Run(fc.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			defer s.Close()
			mustCommit(t, s, history(1), nil, nil)
			ffs.FailOnce(fc.op, fc.suffix, fc.flt)
			if _, err := s.SetPinned(true); !errors.Is(err, fc.flt.Err) {
				t.Fatalf("err %v", err)
			}
			if s.Header().PinnedAt != nil || reopen(t, r, s).Header().PinnedAt != nil {
				t.Fatal("failed pin visible")
			}
			ffs.Arm(nil)
			if p, err := s.SetPinned(true); err != nil || p == nil {
				t.Fatalf("retry %v %v", p, err)
			}
			if reopen(t, r, s).Header().PinnedAt == nil {
				t.Fatal("pin lost")
			}
		})
	}
}

// The first commit of a draft builds the session directory under a
// temporary name: whichever step fails, no session appears and the draft
// can retry.
func TestDraftFirstCommitFaultInjection(t *testing.T) {
	steps := []struct {
		name, op, suffix string
	}{
		{"mkdir temp dir", "mkdir", ""},
		{"lock", "lock", ""},
		{"write messages", "write", messagesFile},
		{"fsync messages", "sync", messagesFile},
		{"write index", "write", indexFile},
		{"write timings", "write", timingsFile},
		{"fsync timings", "sync", timingsFile},
		{"write header", "write", headerFile},
		{"fsync header", "sync", headerFile},
		{"fsync temp dir", "syncdir", ""},
		{"rename into place", "rename", ""},
		{"fsync scope dir after rename", "syncdir", "global"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s := r.Draft("", t.TempDir())
			defer s.Close()
			s.SaveMeta(func(h *Header) { h.Title = "kept" })
			// Directories up to the scope exist already; fail inside it.
			os.MkdirAll(filepath.Dir(s.Dir()), 0o700)
			done := false
			ffs.Arm(func(op, p string) *storetest.Fault {
				if !done && op == st.op && strings.HasSuffix(p, st.suffix) &&
					(st.suffix != "" || strings.Contains(p, ".tmp-")) {
					done = true
					return &storetest.Fault{Err: syscall.ENOSPC, Partial: 10}
				}
				return nil
			})
			first := TimingAt{0, faultTiming(0, true)}
			err := s.Commit(history(1), nil, nil, first)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err %v (ops %v)", err, ffs.Ops())
			}
			ffs.Arm(nil)
			if !s.IsDraft() || len(s.Messages()) != 0 || len(s.Timings()) != 0 {
				t.Fatal("failed first commit changed the draft")
			}
			if entries, _ := os.ReadDir(filepath.Dir(s.Dir())); len(entries) != 0 {
				t.Fatalf("failed first commit left %v", entries)
			}
			if sums, err := r.List("", ListOptions{}); err != nil || len(sums) != 0 {
				t.Fatalf("listed %v %v", sums, err)
			}
			mustCommit(t, s, history(1), nil, nil, first)
			if s.IsDraft() {
				t.Fatal("still a draft")
			}
			o := reopen(t, r, s)
			wantMessages(t, o.Messages(), history(1))
			wantTimings(t, "first commit", o.Timings(), first.Timing)
			if o.Header().Title != "kept" {
				t.Fatal("draft metadata lost")
			}
		})
	}
}

// A header pointing past the end of a log (the log lost bytes it had
// fsynced): Open rejects it, naming the file, and changes nothing; a live
// writer refuses to write rather than fill the gap.
func TestHeaderPastEndOfLog(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(2), nil, nil)
	mpath := filepath.Join(s.Dir(), messagesFile)
	fi, _ := os.Stat(mpath)
	os.Truncate(mpath, fi.Size()-10)

	before := snapshotDir(t, s.Dir())
	err := s.Commit(history(3), nil, nil)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), mpath) {
		t.Fatalf("live commit: %v", err)
	}
	s.Close()
	_, err = r.Open("", s.ID())
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), mpath) || !strings.Contains(err.Error(), "header names") {
		t.Fatalf("open: %v", err)
	}
	after := snapshotDir(t, s.Dir())
	for name, content := range before {
		if after[name] != content {
			t.Fatalf("%s changed", name)
		}
	}
}

// WriteFileAtomic (settings files, recovery files) publishes a file whole
// or not at all: whichever step before the rename fails, on a full disk or
// a failing one, neither the file nor its temporary file is left, and a
// file it was replacing keeps its content.
func TestWriteFileAtomicFailureLeavesNothing(t *testing.T) {
	steps := []struct {
		name, op string
		flt      storetest.Fault
	}{
		{"create temporary file", "open", storetest.Fault{Err: syscall.ENOSPC}},
		{"full disk mid-write", "write", storetest.Fault{Err: syscall.ENOSPC, Partial: 7}},
		{"full disk before the first byte", "write", storetest.Fault{Err: syscall.ENOSPC}},
		{"fsync", "sync", storetest.Fault{Err: syscall.EIO}},
		{"rename", "rename", storetest.Fault{Err: syscall.EIO}},
	}
	for _, st := range steps {
		for _, replacing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replacing=%v", st.name, replacing), func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "loop-recovery-x.json")
				if replacing {
					os.WriteFile(p, []byte("old"), 0o600)
				}
				ffs := &storetest.FaultFS{FS: fsys.OS{}}
				ffs.Arm(func(op, path string) *storetest.Fault {
					if op == st.op && strings.Contains(filepath.Base(path), ".tmp-") {
						return &st.flt
					}
					return nil
				})
				err := writeFileUnique(ffs, p, []byte(`{"messages":["unsaved"]}`), 0o600)
				if !errors.Is(err, st.flt.Err) {
					t.Fatalf("err %v, want %v", err, st.flt.Err)
				}
				entries, _ := os.ReadDir(dir)
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				want := []string(nil)
				if replacing {
					want = []string{"loop-recovery-x.json"}
				}
				if fmt.Sprint(names) != fmt.Sprint(want) {
					t.Fatalf("left %v, want %v", names, want)
				}
				if b, _ := os.ReadFile(p); replacing && string(b) != "old" {
					t.Fatalf("replaced file holds %q", b)
				}
			})
		}
	}
}

// A long message's line is written in pieces (writeLines): a write that
// fails part way through it, torn or not, leaves a tail no header names.
// The commit fails and changes nothing, Open after a crash reads the
// previous range, and the retry writes the whole line once.
func TestALongLineTornBetweenItsPiecesIsCutOff(t *testing.T) {
	text, _ := longText(2 << 20)
	long := append(history(2), convo.Message{Role: convo.RoleUser, Timestamp: 3, Content: []convo.Block{{Type: convo.BlockText, Text: text}}})
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mustCommit(t, s, history(2), nil, nil)
			prev := s.Header()
			writes := 0
			ffs.Arm(func(op, p string) *storetest.Fault {
				if op == "write" && strings.HasSuffix(p, messagesFile) {
					if writes++; writes == 3 {
						return &storetest.Fault{Err: syscall.ENOSPC, Partial: 100}
					}
				}
				return nil
			})
			if err := s.Commit(long, nil, nil); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("commit error %v, want ENOSPC from the third piece", err)
			}
			ffs.Arm(nil)
			if writes < 3 {
				t.Fatalf("the line went in %d writes, want it in pieces", writes)
			}
			fi, _ := os.Stat(filepath.Join(s.Dir(), messagesFile))
			if fi.Size() <= prev.MessagesBytes {
				t.Fatalf("no torn tail: %d bytes, %d committed", fi.Size(), prev.MessagesBytes)
			}
			wantMessages(t, s.Messages(), history(2))
			o := s
			if crash {
				s.Close()
				if o, err = r.Open("", s.ID()); err != nil {
					t.Fatal(err)
				}
				defer o.Close()
			}
			if h := o.Header(); h.MessagesBytes != prev.MessagesBytes || h.MessagesCRC != prev.MessagesCRC {
				t.Fatalf("header names %d bytes, committed %d", h.MessagesBytes, prev.MessagesBytes)
			}
			wantMessages(t, o.Messages(), history(2))
			mustCommit(t, o, long, nil, nil)
			again := reopen(t, r, o)
			defer again.Close()
			wantMessages(t, again.Messages(), long)
			fi, _ = os.Stat(filepath.Join(o.Dir(), messagesFile))
			if fi.Size() != again.Header().MessagesBytes {
				t.Fatalf("messages.jsonl has %d bytes, committed %d", fi.Size(), again.Header().MessagesBytes)
			}
		})
	}
}
