package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// openLegacyGolden opens a copy of the golden session as Loop wrote it
// before timings.jsonl: its prompt timings in header.json.
func openLegacyGolden(t *testing.T) (*Root, *Session) {
	t.Helper()
	r, err := OpenRoot(copyGoldenFrom(t, legacyGoldenDir, legacyGoldenFiles))
	if err != nil {
		t.Fatal(err)
	}
	ffs := &storetest.FaultFS{FS: fsys.OS{}}
	r.fs = ffs
	s, err := r.Open(goldenWorkspace, goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return r, s
}

func headerHolds(t *testing.T, s *Session, what string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(what))
}

// A session written before timings.jsonl opens and lists with its timings;
// metadata saves keep them in header.json; its next commit writes them to
// timings.jsonl and a header without them, and reopening finds the same
// timings.
func TestOldHeaderTimingsMigrateOnNextCommit(t *testing.T) {
	r, s := openLegacyGolden(t)
	wantTimings(t, "old session", s.Timings(), goldenTimings()...)
	if sums, err := r.List(goldenWorkspace, ListOptions{Archived: true}); err != nil || len(sums) != 1 || sums[0].Title != "Manual title" {
		t.Fatalf("List = %+v, %v", sums, err)
	}
	// A metadata save is not a commit: the timings stay where they are.
	if _, err := s.SetPinned(false); err != nil {
		t.Fatal(err)
	}
	if !headerHolds(t, s, `"promptTimings":[`) {
		t.Fatal("a metadata save dropped the timings of an old header")
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), timingsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a metadata save created %s: %v", timingsFile, err)
	}
	wantTimings(t, "after a metadata save", reopen(t, r, s).Timings(), goldenTimings()...)

	more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
	mustCommit(t, s, more, nil, nil)
	if headerHolds(t, s, "promptTimings") {
		t.Fatal("the commit left the timings in header.json")
	}
	if h := s.Header(); h.TimingsCount != 3 {
		t.Fatalf("%d timing records after migrating, want 3", h.TimingsCount)
	}
	o := reopen(t, r, s)
	wantTimings(t, "migrated", o.Timings(), goldenTimings()...)
	wantMessages(t, o.Messages(), more)

	// From then on a commit appends only what is new.
	before, _ := os.Stat(filepath.Join(s.Dir(), timingsFile))
	next := PromptTiming{ID: "run-4", UserMessageIndex: 3, MessageStartIndex: Some(10), StartedAt: 1795972390000}
	mustCommit(t, s, more, nil, nil, TimingAt{Index: 3, Timing: next})
	after, _ := os.Stat(filepath.Join(s.Dir(), timingsFile))
	line, _ := encodeTimings([]TimingAt{{Index: 3, Timing: next}})
	if after.Size()-before.Size() != int64(len(line)) {
		t.Fatalf("timings.jsonl grew by %d bytes, the new record has %d", after.Size()-before.Size(), len(line))
	}
	wantTimings(t, "after the next commit", reopen(t, r, s).Timings(), append(goldenTimings(), next)...)
}

// Archiving a stored session without opening it rewrites an old header
// with its timings still in it.
func TestArchivingStoredOldSessionKeepsHeaderTimings(t *testing.T) {
	r, s := openLegacyGolden(t)
	s.Close()
	if err := r.SetSessionArchived(goldenWorkspace, goldenSession, false); err != nil {
		t.Fatal(err)
	}
	if !headerHolds(t, s, `"promptTimings":[`) {
		t.Fatal("archiving dropped the timings of an old header")
	}
	o, err := r.Open(goldenWorkspace, goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	wantTimings(t, "unarchived", o.Timings(), goldenTimings()...)
	if o.Header().ArchivedAt != nil {
		t.Fatal("still archived")
	}
}

// Every step of the commit that moves an old header's timings fails
// cleanly: the old header and its timings stay, in memory and on disk,
// and the retry migrates.
func TestMigratingCommitFaultInjection(t *testing.T) {
	for _, st := range []struct {
		name, op, suffix string
		flt              storetest.Fault
	}{
		{"create timings.jsonl", "open", timingsFile, storetest.Fault{Err: syscall.ENOSPC}},
		{"fsync dir after creating timings.jsonl", "syncdir", goldenSession, storetest.Fault{Err: syscall.EIO}},
		{"append timings", "write", timingsFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 40}},
		{"fsync timings", "sync", timingsFile, storetest.Fault{Err: syscall.EIO}},
		{"rename header", "rename", headerFile + ".tmp", storetest.Fault{Err: syscall.EIO}},
	} {
		t.Run(st.name, func(t *testing.T) {
			r, s := openLegacyGolden(t)
			ffs := r.fs.(*storetest.FaultFS)
			more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
			ffs.FailOnce(st.op, st.suffix, st.flt)
			if err := s.Commit(more, nil, nil); !errors.Is(err, st.flt.Err) {
				t.Fatalf("commit error %v, want %v", err, st.flt.Err)
			}
			ffs.Arm(nil)
			wantTimings(t, "memory", s.Timings(), goldenTimings()...)
			if !headerHolds(t, s, `"promptTimings":[`) {
				t.Fatal("the failed commit published a header without the timings")
			}
			o := reopen(t, r, s)
			wantTimings(t, "disk", o.Timings(), goldenTimings()...)
			wantMessages(t, o.Messages(), more[:len(more)-1])
			o.Close()

			mustCommit(t, s, more, nil, nil)
			if headerHolds(t, s, "promptTimings") {
				t.Fatal("the retry left the timings in header.json")
			}
			wantTimings(t, "retried", reopen(t, r, s).Timings(), goldenTimings()...)
		})
	}
}

// However many prompts a session holds, header.json stays small: the
// timings are records of timings.jsonl, one per write, never rewritten.
func TestHeaderStaysUnder4KBWithThousandsOfPrompts(t *testing.T) {
	r, _ := newTestRoot(t)
	// Sizes, not durability, are under test: thousands of fsyncs would
	// only make it slow.
	r.fs = noSyncFS{fsys.OS{}}
	s, err := r.CreateWith("", t.TempDir(), func(h *Header) {
		h.Title = strings.Repeat("a long title ", 20)
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude-sonnet"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const prompts = 3000
	var msgs []convo.Message
	var want []PromptTiming
	for i := range prompts {
		msgs = append(msgs, convo.Message{Role: convo.RoleUser, Timestamp: int64(i), Content: []convo.Block{{Type: convo.BlockText, Text: "p"}}})
		tm := PromptTiming{ID: newID(), UserMessageIndex: i, MessageStartIndex: Some(i), MessageEndIndex: Some(i + 1),
			StartedAt: 1795972384000 + int64(i), FinishedAt: Some(1795972384500 + int64(i))}
		want = append(want, tm)
		mustCommit(t, s, msgs, nil, func(h *Header) { h.Unread = true }, TimingAt{Index: i, Timing: tm})
	}
	fi, err := os.Stat(filepath.Join(s.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 4096 {
		t.Fatalf("header.json of %d bytes after %d prompts", fi.Size(), prompts)
	}
	if h := s.Header(); h.TimingsCount != prompts {
		t.Fatalf("%d timing records for %d prompts: timings were written again", h.TimingsCount, prompts)
	}
	wantTimings(t, "reopened", reopen(t, r, s).Timings(), want...)
}

// A timing write must replace a timing or append the next one: a gap or
// a negative index is refused, and nothing changes.
func TestCommitRefusesTimingsOutOfPlace(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	defer s.Close()
	mustCommit(t, s, history(1), nil, nil, TimingAt{Index: 0, Timing: faultTiming(0, false)})
	before := snapshotDir(t, s.Dir())
	for name, w := range map[string]TimingAt{
		"gap":                    {Index: 2, Timing: faultTiming(2, false)},
		"negative index":         {Index: -1, Timing: faultTiming(0, true)},
		"negative message index": {Index: 1, Timing: PromptTiming{UserMessageIndex: 1, MessageEndIndex: Some(-4)}},
	} {
		if err := s.Commit(history(2), nil, nil, w); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	wantTimings(t, "after refused writes", s.Timings(), faultTiming(0, false))
	after := snapshotDir(t, s.Dir())
	if !reflect.DeepEqual(before, after) {
		t.Fatal("a refused commit changed the files")
	}
}

// Timings returns the session's own slice, capped: reading is free, and a
// caller appending to it cannot reach what the next commit installs.
func TestTimingsAreSharedButCapped(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	defer s.Close()
	mustCommit(t, s, history(1), nil, nil, TimingAt{Index: 0, Timing: faultTiming(0, false)})
	got := s.Timings()
	_ = append(got, faultTiming(7, true))
	mustCommit(t, s, history(2), nil, nil, TimingAt{Index: 1, Timing: faultTiming(1, false)}, TimingAt{Index: 0, Timing: faultTiming(0, true)})
	wantTimings(t, "held by the caller", got, faultTiming(0, false))
	wantTimings(t, "committed", s.Timings(), faultTiming(0, true), faultTiming(1, false))
	wantTimings(t, "from 1", s.TimingsFrom(1), faultTiming(1, false))
	if len(s.TimingsFrom(5)) != 0 || len(s.TimingsFrom(-1)) != 2 {
		t.Fatal("TimingsFrom out of range")
	}
}

// noSyncFS skips every fsync.
type noSyncFS struct{ fsys.FS }

func (n noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	f, err := n.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

type noSyncFile struct{ fsys.File }

func (noSyncFile) Sync() error { return nil }

// A process killed after any step of a commit (every file operation in
// turn, a write torn in half) leaves the old or the new committed state,
// messages and timings together, never a mix; the next process commits
// on top of it. For an ordinary commit and for the one that moves an old
// header's timings to timings.jsonl.
func TestKillAtEveryStepOfACommit(t *testing.T) {
	type state struct {
		msgs    []convo.Message
		timings []PromptTiming
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) (*Root, *Session)
		// commit is the commit killed; it moves the session from the old
		// state to the next.
		commit func(s *Session) error
	}{
		{"commit", func(t *testing.T) (*Root, *Session) {
			r, _ := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s, history(2), nil, nil, TimingAt{0, faultTiming(0, false)})
			return r, s
		}, func(s *Session) error {
			return s.Commit(history(3), []RuntimeRecord{rtRecord("r", 1)}, func(h *Header) { h.Title = "new" },
				TimingAt{0, faultTiming(0, true)}, TimingAt{1, faultTiming(1, false)})
		}},
		{"migrating commit", func(t *testing.T) (*Root, *Session) {
			return openLegacyGolden(t)
		}, func(s *Session) error {
			more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
			return s.Commit(more, nil, func(h *Header) { h.Title = "new" }, TimingAt{3, faultTiming(3, false)})
		}},
	}
	for _, c := range cases {
		r, s := c.setup(t)
		if err := c.commit(s); err != nil {
			t.Fatal(err)
		}
		o := reopen(t, r, s)
		next := state{o.Messages(), o.Timings()}
		o.Close()
		s.Close()
		for _, torn := range []bool{false, true} {
			for step := 0; ; step++ {
				r, s := c.setup(t)
				ffs, ok := r.fs.(*storetest.FaultFS)
				if !ok {
					ffs = &storetest.FaultFS{FS: r.fs}
					r.fs, s.fs = ffs, ffs
				}
				old := state{slices.Clone(s.Messages()), slices.Clone(s.Timings())}
				ops := 0
				ffs.Arm(func(op, p string) *storetest.Fault {
					if ops++; ops <= step {
						return nil
					}
					if torn && ops == step+1 && op == "write" {
						return &storetest.Fault{Err: storetest.ErrInjected, Partial: 9}
					}
					return &storetest.Fault{Err: storetest.ErrInjected}
				})
				err := c.commit(s)
				ffs.Arm(nil)
				if err == nil {
					// The commit completed before the kill point: every step
					// has been killed.
					s.Close()
					if step < 10 {
						t.Fatalf("%s: a commit of only %d steps", c.name, step)
					}
					t.Logf("%s (torn %v): killed at each of %d steps", c.name, torn, step)
					break
				}
				s.Close() // the process dies: only the files remain
				o, err := r.Open(goldenOr(s), s.ID())
				if err != nil {
					t.Fatalf("%s, killed at step %d (torn %v): reopen: %v", c.name, step, torn, err)
				}
				got := state{o.Messages(), o.Timings()}
				if !reflect.DeepEqual(got, old) && !(o.Header().Title == "new" && reflect.DeepEqual(got, next)) {
					t.Fatalf("%s, killed at step %d (torn %v): %d messages, timings %+v; old state had %d, %+v",
						c.name, step, torn, len(got.msgs), got.timings, len(old.msgs), old.timings)
				}
				if reflect.DeepEqual(got, old) {
					// The next process retries the commit on the old state.
					if err := c.commit(o); err != nil {
						t.Fatalf("%s, killed at step %d (torn %v): next commit: %v", c.name, step, torn, err)
					}
				}
				o.Close()
			}
		}
	}
}

// goldenOr is the scope of a test session: the golden workspace for the
// golden session, else the independent collection.
func goldenOr(s *Session) string {
	if s.ID() == goldenSession {
		return goldenWorkspace
	}
	return ""
}

// Reading the header, or the timings, costs the same with 2 timings as
// with 2,000: the header carries no timings and Timings shares its slice.
func TestHeaderReadCostsTheSameHoweverManyTimings(t *testing.T) {
	allocs := func(n int) (header, timings float64) {
		s := InMemory(t.TempDir())
		var ws []TimingAt
		for i := range n {
			ws = append(ws, TimingAt{Index: i, Timing: faultTiming(i, true)})
		}
		mustCommit(t, s, history(1), nil, func(h *Header) { h.Model = &ModelRef{Provider: "p", ID: "m"} }, ws...)
		if len(s.Timings()) != n {
			t.Fatalf("%d timings, want %d", len(s.Timings()), n)
		}
		header = testing.AllocsPerRun(20, func() { _ = s.Header() })
		timings = testing.AllocsPerRun(20, func() { _ = s.TimingsFrom(n - 1) })
		return header, timings
	}
	h2, t2 := allocs(2)
	h2000, t2000 := allocs(2000)
	if h2000 != h2 || t2000 != t2 || t2000 != 0 {
		t.Fatalf("allocations per read: Header %v with 2 timings, %v with 2,000; Timings %v and %v", h2, h2000, t2, t2000)
	}
}

// A migrating commit whose header was renamed into place but whose
// directory fsync failed puts the old header, timings included, back; a
// metadata save before the retry keeps them there; the retry migrates.
// Also when putting the old header back fails too (the retry then
// republishes the committed header first).
func TestMigratingCommitPublishedButNotDurableThenMetadataSaveThenRetry(t *testing.T) {
	for _, restoreFails := range []bool{false, true} {
		name := "restored"
		if restoreFails {
			name = "restore fails"
		}
		t.Run(name, func(t *testing.T) {
			r, s := openLegacyGolden(t)
			ffs := r.fs.(*storetest.FaultFS)
			more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
			syncs, renames := 0, 0
			ffs.Arm(func(op, p string) *storetest.Fault {
				switch {
				case op == "syncdir" && filepath.Base(p) == goldenSession:
					// The first fsyncs timings.jsonl's entry, the second
					// follows the header's rename.
					if syncs++; syncs == 2 {
						return &storetest.Fault{Err: syscall.EIO}
					}
				case op == "rename" && strings.HasSuffix(p, headerFile) && restoreFails:
					if renames++; renames == 2 {
						return &storetest.Fault{Err: syscall.EIO}
					}
				}
				return nil
			})
			if err := s.Commit(more, nil, nil); !errors.Is(err, syscall.EIO) {
				t.Fatalf("commit error %v, want EIO", err)
			}
			ffs.Arm(nil)
			wantTimings(t, "memory", s.Timings(), goldenTimings()...)
			if !restoreFails && !headerHolds(t, s, `"promptTimings":[`) {
				t.Fatal("the old header was not put back")
			}
			if _, err := s.SetPinned(true); err != nil {
				t.Fatal(err)
			}
			if !headerHolds(t, s, `"promptTimings":[`) {
				t.Fatal("a metadata save after the failed migration dropped the timings")
			}
			o := reopen(t, r, s)
			wantTimings(t, "disk after the save", o.Timings(), goldenTimings()...)
			wantMessages(t, o.Messages(), more[:len(more)-1])
			o.Close()

			mustCommit(t, s, more, nil, nil)
			if headerHolds(t, s, "promptTimings") {
				t.Fatal("the retry left the timings in header.json")
			}
			o = reopen(t, r, s)
			wantTimings(t, "retried", o.Timings(), goldenTimings()...)
			wantMessages(t, o.Messages(), more)
			if o.Header().PinnedAt == nil {
				t.Fatal("the pin saved between was lost")
			}
		})
	}
}

// A header that holds promptTimings and also names records of
// timings.jsonl is malformed: Loop never writes one, and the commit that
// moves the header's timings would fold the file's earlier records from
// an empty list, turning a session it had opened into one it cannot.
func TestHeaderWithPromptTimingsAndTimingsRecordsIsMalformed(t *testing.T) {
	root := copyGoldenFrom(t, legacyGoldenDir, legacyGoldenFiles)
	dir := filepath.Join(root, "sessions", goldenWorkspace, goldenSession)
	line, err := encodeTimings([]TimingAt{{Index: len(goldenTimings()), Timing: PromptTiming{UserMessageIndex: 1, StartedAt: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, timingsFile), line, 0o600); err != nil {
		t.Fatal(err)
	}
	hpath := filepath.Join(dir, headerFile)
	data, err := os.ReadFile(hpath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["timingsCount"] = json.RawMessage("1")
	m["timingsBytes"] = json.RawMessage(fmt.Sprint(len(line)))
	m["timingsCrc32c"] = json.RawMessage(fmt.Sprint(fsys.CRC32C(0, line)))
	data, _ = json.Marshal(m)
	if err := os.WriteFile(hpath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Open(goldenWorkspace, goldenSession)
	if err == nil {
		// What the old code did: open it, then break it on commit.
		more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
		cerr := s.Commit(more, nil, nil)
		s.Close()
		_, rerr := r.Open(goldenWorkspace, goldenSession)
		t.Fatalf("opened; commit: %v; reopening after the commit: %v", cerr, rerr)
	}
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "promptTimings") {
		t.Fatalf("Open = %v, want ErrMalformed naming promptTimings", err)
	}
}

// A timings.jsonl line without its index is malformed: read as index 0 it
// would silently replace the session's first timing.
func TestTimingLineWithoutIndexIsMalformed(t *testing.T) {
	data := []byte(`{"index":0,"userMessageIndex":0,"startedAt":1}` + "\n" + `{"userMessageIndex":1,"startedAt":2}` + "\n")
	if _, err := parseTimings(nil, data, 2, timingsFile); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a line without index: %v, want ErrMalformed", err)
	}
}
