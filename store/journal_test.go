package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// journalRun writes the journal of the round prompt(i) on s, as the
// engine does, up to and including the record numbered upto (0: the
// begin record with the prompt; 1: the assistant message with the tool
// call; 2: the call's start; 3: its result; 4: the final answer). It
// returns the journal and the round's messages.
func journalRound(t testing.TB, s *Session, i, upto int) (*Journal, []convo.Message) {
	t.Helper()
	msgs := prompt(i)
	base := len(s.Messages())
	users := 0
	for _, m := range s.Messages() {
		if m.IsUser() {
			users++
		}
	}
	j, err := s.BeginJournal(JournalBegin{
		RunID: runIDOf(i), RequestID: msgs[0].RequestID, StartedAt: msgs[0].Timestamp, MessageCount: base,
		UserMessageIndex: users, User: &msgs[0], At: msgs[0].Timestamp,
	})
	if err != nil {
		t.Fatalf("begin journal: %v", err)
	}
	run := convo.UsageSum{}
	steps := []func() error{
		func() error {
			run.Add(convo.UsageSum{Input: 100, Output: 20, TotalTokens: 120, Calls: 1})
			return j.Message(base+1, &msgs[1], run, msgs[1].Timestamp, true)
		},
		func() error { return j.ToolStart(base+1, 0, msgs[1].Content[1].ID, msgs[1].Timestamp) },
		func() error { return j.Message(base+2, &msgs[2], run, msgs[2].Timestamp, false) },
		func() error {
			run.Add(convo.UsageSum{Input: 150, Output: 30, TotalTokens: 180, Calls: 1})
			return j.Message(base+3, &msgs[3], run, msgs[3].Timestamp, true)
		},
	}
	for k := 1; k <= upto; k++ {
		if err := steps[k-1](); err != nil {
			t.Fatalf("journal record %d: %v", k, err)
		}
	}
	return j, msgs
}

func runIDOf(i int) string { return "run-" + string(rune('a'+i)) }

// crash drops s as a killed process would: its lock and files go, its
// journal stays as written.
func crash(s *Session) { s.Close() }

func TestAJournaledRunIsCommittedAsInterruptedOnTheNextOpen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		upto    int
		want    int    // messages of the round kept
		answer  string // the error result the recovery adds, "" for none
		unread  bool
		started bool
	}{
		{"prompt only", 0, 1, "", false, false},
		{"assistant asked for a tool that never started", 1, 2, InterruptedUnrunText, true, false},
		{"the tool started and its result was lost", 2, 2, InterruptedStartedText, true, true},
		{"the tool's result was journaled", 3, 3, "", true, true},
		{"the final answer was journaled, not committed", 4, 4, "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			prev := history(1)
			mustCommit(t, s, prev, nil, nil, TimingAt{0, PromptTiming{ID: runIDOf(0), MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2))}})
			_, msgs := journalRound(t, s, 1, tc.upto)
			crash(s)

			o, err := r.OpenDir(s.Dir())
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if o.ReadOnly() {
				t.Fatalf("read-only after recovery: %v", o.ReadOnlyReason())
			}
			want := append(append([]convo.Message(nil), prev...), msgs[:tc.want]...)
			if tc.answer != "" {
				want = append(want, convo.Message{Role: convo.RoleToolResult, ToolCallID: "call-1", ToolName: "read", IsError: true,
					Timestamp: msgs[tc.want-1].Timestamp, Content: []convo.Block{{Type: convo.BlockText, Text: tc.answer}}})
			}
			wantMessages(t, o.Messages(), want)
			rec := o.Recovered()
			if rec == nil || rec.RunID != runIDOf(1) || rec.Messages != len(want)-4 || rec.MessageStart != 4 || rec.Unread != tc.unread {
				t.Fatalf("recovered %+v", rec)
			}
			h := o.Header()
			if h.Recovered == nil || h.Recovered.RunID != runIDOf(1) || h.Recovered.Messages != rec.Messages || h.Unread != tc.unread {
				t.Fatalf("header recovered %+v unread %v", h.Recovered, h.Unread)
			}
			ts := o.Timings()
			if len(ts) != 2 || !ts[1].Interrupted || ts[1].ID != runIDOf(1) || ts[1].MessageStartIndex != Some(4) ||
				ts[1].MessageEndIndex != Some(len(want)) || ts[1].UserMessageIndex != 1 || !ts[1].FinishedAt.Set {
				t.Fatalf("timings %+v", ts)
			}
			if tc.upto >= 1 && (ts[1].Usage.Calls == 0 || h.Usage.Calls != ts[1].Usage.Calls) {
				t.Fatalf("usage of the recovered run %+v, ledger %+v", ts[1].Usage, h.Usage)
			}
			if fi, err := os.Stat(filepath.Join(s.Dir(), journalFile)); err != nil || fi.Size() != 0 {
				t.Fatalf("journal not retired: %v %v", fi, err)
			}

			// A second open changes nothing and still says what was
			// recovered.
			o.Close()
			o2 := reopen(t, r, s)
			wantMessages(t, o2.Messages(), want)
			if o2.Recovered() != nil || o2.Header().Recovered == nil || len(o2.Timings()) != 2 {
				t.Fatalf("second open: recovered %+v header %+v timings %d", o2.Recovered(), o2.Header().Recovered, len(o2.Timings()))
			}
		})
	}
}

func TestARunCommittedBeforeItsJournalWasRetiredIsNotCommittedTwice(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, msgs := journalRound(t, s, 0, 4)
	mustCommit(t, s, msgs, nil, nil, TimingAt{0, PromptTiming{ID: runIDOf(0), MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2))}})
	crash(s) // before Retire

	o := reopen(t, r, s)
	wantMessages(t, o.Messages(), msgs)
	if o.Recovered() != nil || o.Header().Recovered != nil || len(o.Timings()) != 1 {
		t.Fatalf("the committed run was recovered again: %+v", o.Recovered())
	}
	if fi, err := os.Stat(filepath.Join(s.Dir(), journalFile)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal not retired: %v %v", fi, err)
	}
}

func TestARetiredJournalLeavesNothingToRecover(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, msgs := journalRound(t, s, 0, 4)
	mustCommit(t, s, msgs, nil, nil, TimingAt{0, PromptTiming{ID: runIDOf(0), MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2))}})
	if err := j.Retire(); err != nil {
		t.Fatal(err)
	}
	// The next run reuses the file.
	j2, _ := journalRound(t, s, 1, 0)
	if j2 != j {
		t.Fatal("a second run opened another journal")
	}
	crash(s)
	o := reopen(t, r, s)
	if len(o.Messages()) != 5 || o.Recovered() == nil || o.Recovered().RunID != runIDOf(1) {
		t.Fatalf("got %d messages, recovered %+v", len(o.Messages()), o.Recovered())
	}
}

func TestATornLastJournalRecordIsDropped(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, msgs := journalRound(t, s, 0, 3)
	path := filepath.Join(s.Dir(), journalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// Keep the begin record and the assistant message; the start record
	// stays whole and the result is cut in its middle.
	torn := lines[0] + lines[1] + lines[2] + lines[3][:len(lines[3])/2]
	crash(s)
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	o := reopen(t, r, s)
	got := o.Messages()
	if len(got) != 3 || got[2].Role != convo.RoleToolResult || !got[2].IsError || got[2].Content[0].Text != InterruptedStartedText {
		t.Fatalf("got %+v", got)
	}
	wantMessages(t, got[:2], msgs[:2])
}

func TestAJournalThatCannotBeAppliedIsRefusedAndTheHistoryOpensReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(data []byte, s *Session) []byte
		why    string
	}{
		{"a damaged record before the last", func(d []byte, _ *Session) []byte {
			i := strings.Index(string(d), `"assistant"`)
			d[i+2] ^= 1
			return d
		}, "checksum"},
		{"another version", func(d []byte, _ *Session) []byte {
			return rewriteFirst(d, func(l string) string { return strings.Replace(l, `"version":1`, `"version":2`, 1) })
		}, "journal version 2"},
		{"another session's journal", func(d []byte, _ *Session) []byte {
			return rewriteFirst(d, func(l string) string {
				i := strings.Index(l, `"sessionId":"`) + len(`"sessionId":"`)
				return l[:i] + "f" + l[i+1:]
			})
		}, "not of this session"},
		{"a run that does not continue the history", func(d []byte, _ *Session) []byte {
			d = rewriteFirst(d, func(l string) string {
				return strings.Replace(strings.Replace(l, `"messageCount":4`, `"messageCount":8`, 1), `"index":4`, `"index":8`, 1)
			})
			return d[:strings.IndexByte(string(d), '\n')+1]
		}, "not the run in progress"},
		{"records out of order", func(d []byte, _ *Session) []byte {
			lines := strings.SplitAfter(string(d), "\n")
			return []byte(lines[0] + lines[1] + lines[2] + lines[4] + lines[3])
		}, "out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s, history(1), nil, nil)
			journalRound(t, s, 1, 4)
			crash(s)
			path := filepath.Join(s.Dir(), journalFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := tc.damage(data, s)
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			o := reopen(t, r, s)
			wantMessages(t, o.Messages(), history(1))
			why := o.ReadOnlyReason()
			if why == nil || !errors.Is(why, ErrMalformed) || !strings.Contains(why.Error(), path) || !strings.Contains(why.Error(), tc.why) {
				t.Fatalf("read-only reason %v, want one naming %s and %q", why, path, tc.why)
			}
			if err := o.Commit(history(2), nil, nil); !errors.Is(err, ErrNotWritable) {
				t.Fatalf("commit on the refused session: %v", err)
			}
			if got, _ := os.ReadFile(path); string(got) != string(bad) {
				t.Fatal("the refused journal was changed")
			}
		})
	}
}

// rewriteFirst rewrites the journal's first record with edit and gives it
// its checksum again, as a writer of that content would have.
func rewriteFirst(data []byte, edit func(string) string) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	obj := edit(lines[0][:len(lines[0])-journalCRCSize-1])
	return []byte(fmt.Sprintf("%s\t%08x\n", obj, fsys.CRC32C(0, []byte(obj))) + strings.Join(lines[1:], ""))
}

func TestALiveRunsJournalIsNotTouchedByAnotherHandle(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	journalRound(t, s, 0, 2)
	path := filepath.Join(s.Dir(), journalFile)
	before, _ := os.ReadFile(path)
	o := reopen(t, r, s) // read-only: s holds the lock
	if !o.ReadOnly() || len(o.Messages()) != 0 || o.Recovered() != nil {
		t.Fatalf("a second handle recovered a live run: read-only %v, %d messages", o.ReadOnly(), len(o.Messages()))
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the live journal changed")
	}
}

func TestAReadOnlyHandleReopensToRecoverADeadWritersRun(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := reopen(t, r, s) // read-only while s writes
	journalRound(t, s, 0, 2)
	crash(s)
	err = o.TryWritable()
	if !errors.Is(err, ErrStale) {
		t.Fatalf("TryWritable with a dead writer's journal: %v, want ErrStale (open again)", err)
	}
	o2 := reopen(t, r, s)
	if o2.Recovered() == nil || len(o2.Messages()) != 3 {
		t.Fatalf("reopen recovered %+v, %d messages", o2.Recovered(), len(o2.Messages()))
	}
}

func TestADraftsFirstJournaledRunMakesItExistOnDisk(t *testing.T) {
	r, _ := newTestRoot(t)
	d := r.Draft("", t.TempDir())
	if _, err := os.Stat(d.Dir()); !os.IsNotExist(err) {
		t.Fatalf("a draft is on disk before its first run: %v", err)
	}
	_, msgs := journalRound(t, d, 0, 1)
	if d.IsDraft() {
		t.Fatal("still a draft after its first run began")
	}
	crash(d)
	o, err := r.Open("", d.ID())
	if err != nil {
		t.Fatalf("open by id after the crash: %v", err)
	}
	defer o.Close()
	if len(o.Messages()) != 3 || o.Recovered() == nil {
		t.Fatalf("got %d messages, recovered %+v", len(o.Messages()), o.Recovered())
	}
	wantMessages(t, o.Messages()[:2], msgs[:2])
	sums, err := r.List("", ListOptions{})
	if err != nil || len(sums) != 1 || sums[0].ID != d.ID() {
		t.Fatalf("list after recovery: %+v %v", sums, err)
	}
}

// A draft written at its first prompt lists at once, in this process's
// root and through the summary index, before an open has recovered or a
// commit has saved its run; the commit that saves a user message clears
// the header's pendingRun.
func TestADraftWrittenForItsFirstRunListsUntilItsRunIsCommitted(t *testing.T) {
	r, _ := newTestRoot(t)
	d := r.Draft("", t.TempDir())
	if err := d.PersistForRun("run-1"); err != nil {
		t.Fatal(err)
	}
	if h := d.Header(); h.PendingRun != "run-1" || h.UserMessageCount != 0 {
		t.Fatalf("header %+v", h)
	}
	sums, err := r.List("", ListOptions{})
	if err != nil || len(sums) != 1 || sums[0].ID != d.ID() {
		t.Fatalf("list of the draft whose first run is journaled: %+v %v", sums, err)
	}
	page, err := r.ListPage("", PageOptions{Limit: 10})
	if err != nil || len(page) != 1 {
		t.Fatalf("list page: %+v %v", page, err)
	}
	msgs := []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "hi"}}}}
	if err := d.Commit(msgs, nil, nil); err != nil {
		t.Fatal(err)
	}
	if h := d.Header(); h.PendingRun != "" {
		t.Fatalf("pendingRun after the run's commit: %q", h.PendingRun)
	}
}

func TestAnInMemorySessionHasNoJournal(t *testing.T) {
	s := InMemory(t.TempDir())
	j, err := s.BeginJournal(JournalBegin{RunID: "r"})
	if j != nil || err != nil {
		t.Fatalf("in-memory journal %v %v", j, err)
	}
}

// journalFaults fail one step of the journal: of a run writing it
// (step: the journalRound record whose write the fault hits, -1 for the
// end-of-run retire), or of the recovery on open (recovery).
var journalFaults = []struct {
	name     string
	op       string
	suffix   string
	flt      storetest.Fault
	step     int
	recovery bool
}{
	{"create the journal", "open", journalFile, storetest.Fault{Err: syscall.ENOSPC}, 0, false},
	{"fsync the session dir after creating it", "syncdir", "", storetest.Fault{Err: syscall.EIO}, 0, false},
	{"truncate the previous run's journal", "truncate", journalFile, storetest.Fault{Err: syscall.EIO}, 0, false},
	{"write the begin record", "write", journalFile, storetest.Fault{Err: syscall.ENOSPC}, 0, false},
	{"torn begin record", "write", journalFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 40}, 0, false},
	{"torn assistant message", "write", journalFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 30}, 1, false},
	{"fsync the assistant message", "sync", journalFile, storetest.Fault{Err: syscall.EIO}, 1, false},
	{"write the tool start", "write", journalFile, storetest.Fault{Err: syscall.ENOSPC}, 2, false},
	{"fsync the tool start", "sync", journalFile, storetest.Fault{Err: syscall.EIO}, 2, false},
	{"torn tool result", "write", journalFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 12}, 3, false},
	{"retire after the commit", "truncate", journalFile, storetest.Fault{Err: syscall.EIO}, -1, false},
	{"recovery reads the journal", "read", journalFile, storetest.Fault{Err: syscall.EIO}, 0, true},
	{"recovery appends the messages", "write", messagesFile, storetest.Fault{Err: syscall.ENOSPC, Partial: 10}, 0, true},
	{"recovery fsyncs the timings", "sync", timingsFile, storetest.Fault{Err: syscall.EIO}, 0, true},
	{"recovery publishes the header", "rename", headerFile + ".tmp", storetest.Fault{Err: syscall.EIO}, 0, true},
	{"recovery retires the journal", "truncate", journalFile, storetest.Fault{Err: syscall.EIO}, 0, true},
}

// A directory fsync of the journal that failed is done again by the next
// run's BeginJournal, though the file is there by then: no tool start is
// fsynced into a file whose entry may not outlive a power loss.
func TestAFailedJournalDirectorySyncIsDoneAgainByTheNextRun(t *testing.T) {
	r, ffs := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	round := prompt(0)
	ffs.FailOnce("syncdir", "", storetest.Fault{Err: syscall.EIO})
	if _, err := s.BeginJournal(JournalBegin{RunID: runIDOf(0), UserMessageIndex: 0, User: &round[0]}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("begin with a failing directory fsync: %v", err)
	}
	ffs.ResetOps()
	if _, err := s.BeginJournal(JournalBegin{RunID: runIDOf(0), UserMessageIndex: 0, User: &round[0]}); err != nil {
		t.Fatal(err)
	}
	if ops := strings.Join(ffs.Ops(), " "); !strings.Contains(ops, "syncdir") {
		t.Fatalf("the next begin did not fsync the directory: %s", ops)
	}
}

// A retired journal takes no record: one after the retire would have no
// begin record before it, and the next open would refuse the journal.
func TestARetiredJournalTakesNoRecord(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, msgs := journalRound(t, s, 0, 1)
	if err := j.Retire(); err != nil {
		t.Fatal(err)
	}
	if err := j.Message(1, &msgs[0], convo.UsageSum{}, 1, true); err == nil {
		t.Fatal("a retired journal took a record")
	}
}

func TestJournalFaultInjection(t *testing.T) {
	for _, fc := range journalFaults {
		t.Run(fc.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			// Never a created journal when the step is its creation.
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			prev := history(1)
			mustCommit(t, s, prev, nil, nil)
			round := prompt(1)
			acked := 0 // messages of the round whose records were written
			switch {
			case fc.recovery:
				journalRound(t, s, 1, 3)
				acked = 3
			case fc.step == -1:
				j, msgs := journalRound(t, s, 1, 4)
				mustCommit(t, s, append(prev, msgs...), nil, nil, TimingAt{0, PromptTiming{ID: runIDOf(1), MessageStartIndex: Some(4), MessageEndIndex: Some(8), StartedAt: 1, FinishedAt: Some(int64(2))}})
				ffs.FailOnce(fc.op, fc.suffix, fc.flt)
				if err := j.Retire(); !errors.Is(err, fc.flt.Err) {
					t.Fatalf("retire: %v", err)
				}
				acked = 4
			case fc.step == 0:
				ffs.FailOnce(fc.op, fc.suffix, fc.flt)
				if _, err := s.BeginJournal(JournalBegin{RunID: runIDOf(1), MessageCount: 4, UserMessageIndex: 1, User: &round[0]}); !errors.Is(err, fc.flt.Err) {
					t.Fatalf("begin: %v, want %v", err, fc.flt.Err)
				}
			default:
				j, _ := journalRound(t, s, 1, fc.step-1)
				acked = fc.step // the prompt and the records before the step
				if fc.step >= 3 {
					acked = fc.step - 1 // the tool start holds no message
				}
				ffs.FailOnce(fc.op, fc.suffix, fc.flt)
				var err error
				switch fc.step {
				case 1:
					err = j.Message(5, &round[1], convo.UsageSum{Calls: 1}, 5, true)
				case 2:
					err = j.ToolStart(5, 0, "call-1", 6)
				case 3:
					err = j.Message(6, &round[2], convo.UsageSum{Calls: 1}, 7, false)
				}
				if !errors.Is(err, fc.flt.Err) {
					t.Fatalf("step %d: %v, want %v", fc.step, err, fc.flt.Err)
				}
				// The journal refuses every later record: it no longer
				// says what the run did.
				if err := j.Message(9, &round[3], convo.UsageSum{}, 8, true); err == nil {
					t.Fatal("a journal that failed took another record")
				}
			}
			ffs.Arm(nil)
			crash(s)

			if fc.recovery {
				ffs.FailOnce(fc.op, fc.suffix, fc.flt)
				o, err := r.OpenDir(s.Dir())
				ffs.Arm(nil)
				if err != nil {
					t.Fatalf("open with a failing recovery: %v", err)
				}
				wantReadOnly := fc.op != "truncate"
				if o.ReadOnly() != wantReadOnly {
					t.Fatalf("read-only %v (%v), want %v", o.ReadOnly(), o.ReadOnlyReason(), wantReadOnly)
				}
				if wantReadOnly {
					wantMessages(t, o.Messages(), prev)
				}
				o.Close()
			}
			o := reopen(t, r, s)
			if o.ReadOnly() {
				t.Fatalf("read-only: %v", o.ReadOnlyReason())
			}
			got := o.Messages()
			wantMessages(t, got[:4], prev)
			kept := got[4:]
			if len(kept) < acked {
				t.Fatalf("kept %d messages of the round, %d were journaled", len(kept), acked)
			}
			for i := range kept {
				if i < len(round) && i < acked {
					wantMessages(t, kept[i:i+1], round[i:i+1])
				}
			}
			if len(o.Timings()) > 1 {
				t.Fatalf("the run was committed twice: %+v", o.Timings())
			}
			o.Close()
			// And the session takes the next run.
			o2 := reopen(t, r, s)
			if _, err := o2.BeginJournal(JournalBegin{RunID: "next", MessageCount: len(got)}); err != nil {
				t.Fatalf("the next run's journal: %v", err)
			}
		})
	}
}

// FuzzJournalReader: no journal, however damaged, panics the reader or is
// applied unless every record but a torn last one is whole and in order.
func FuzzJournalReader(f *testing.F) {
	r, _ := newTestRoot(f)
	s, err := r.Create("", f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	journalRound(f, s, 0, 4)
	data, err := os.ReadFile(filepath.Join(s.Dir(), journalFile))
	if err != nil {
		f.Fatal(err)
	}
	id := s.ID()
	s.Close()
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("{}\t00000000\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := parseJournal(b, "journal.jsonl", id)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "journal.jsonl") {
				t.Fatalf("error %v does not name the file as malformed", err)
			}
			return
		}
		if run == nil {
			return
		}
		if run.begin.SessionID != id || run.begin.Version != JournalVersion || len(run.usage) != len(run.msgs) {
			t.Fatalf("applied a journal with begin %+v", run.begin)
		}
		for k := range run.started {
			if k[0] < run.base() || k[0] >= run.base()+len(run.msgs) {
				t.Fatalf("a tool start outside the run: %v", k)
			}
		}
		// Whatever the reader takes, the results it adds answer calls.
		for _, m := range interruptedResults(run) {
			if m.Role != convo.RoleToolResult || !m.IsError {
				t.Fatalf("added %+v", m)
			}
		}
	})
}

func TestALongPromptIsJournaledInPiecesAndRecoveredWhole(t *testing.T) {
	r, ffs := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := convo.Message{Role: convo.RoleUser, Timestamp: 5, Content: []convo.Block{{Type: convo.BlockText, Text: strings.Repeat("pasted \"file\" ✓\n", 200_000)}}}
	ffs.ResetOps()
	if _, err := s.BeginJournal(JournalBegin{RunID: "long", MessageCount: 0, User: &long, At: 5}); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, op := range ffs.Ops() {
		if op == "write "+journalFile {
			writes++
		}
	}
	if writes < 10 {
		t.Fatalf("a %d-byte prompt was journaled in %d writes, want it in pieces", len(long.Content[0].Text), writes)
	}
	crash(s)
	o := reopen(t, r, s)
	wantMessages(t, o.Messages(), []convo.Message{long})
}

// BenchmarkJournalRecord is what one journal record costs: a tool result
// (written), an assistant message (written and fsynced), a tool start
// (written and fsynced). Run it on tmpfs (TMPDIR=/dev/shm) for the CPU
// and on a disk for the fsync (docs/performance.md).
func BenchmarkJournalRecord(b *testing.B) {
	r, _ := newTestRoot(b)
	r.fs = fsys.OS{}
	s, err := r.Create("", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	round := prompt(0)
	j, err := s.BeginJournal(JournalBegin{RunID: "bench", User: &round[0]})
	if err != nil {
		b.Fatal(err)
	}
	for _, rec := range []struct {
		name string
		add  func(i int) error
	}{
		{"tool result", func(i int) error { return j.Message(i, &round[2], convo.UsageSum{}, 1, false) }},
		{"assistant message", func(i int) error { return j.Message(i, &round[1], convo.UsageSum{Calls: 1}, 1, true) }},
		{"tool start", func(i int) error { return j.ToolStart(1, 0, "call-0", 1) }},
	} {
		b.Run(rec.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				if err := rec.add(j.next + 0*i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestJournalRecordsEncodeAsEncodingJSON(t *testing.T) {
	n := func(i int) *int { return &i }
	for _, rec := range []journalRecord{
		{Type: journalBegin, Time: 1, Version: 1, SessionID: "s <&>", RunID: "r", RequestID: "q", StartedAt: 2, MessageCount: n(0), UserMessageIndex: n(3), Index: n(0)},
		{Type: journalMessage, Time: 5, Index: n(7), RunUsage: &usageSumRecord{Input: 1, Output: 2, TotalTokens: 3, Calls: 1, Cost: 0.25, Unpriced: 1}},
		{Type: journalToolStart, Time: 6, Index: n(7), Call: n(2), CallID: "call_\u2028\"x\""},
	} {
		e := lineEnc{}
		rec.encode(&e)
		e.raw("}")
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		// encoding/json escapes <, > and &; the journal, like every file
		// of the store, does not (docs/storage.md).
		var got, w any
		if err := json.Unmarshal(e.buf, &got); err != nil {
			t.Fatalf("%s: %v", e.buf, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(got, w) || len(e.buf) > len(want) {
			t.Fatalf("encoded\n %s\nwant\n %s", e.buf, want)
		}
		if want, _ := jsonenc.Marshal(rec); !bytes.Equal(e.buf, bytes.TrimSpace(want)) {
			t.Fatalf("encoded\n %s\nwant\n %s", e.buf, want)
		}
	}
}

func TestARunWhoseCheckpointCommittedItsFirstMessagesRecoversOnlyTheRest(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, msgs := journalRound(t, s, 0, 3)
	// A compaction checkpoint in the run commits the history so far
	// (commitCheckpoint, engine/compact.go): no timing, the run goes on.
	mustCommit(t, s, msgs[:3], []RuntimeRecord{rtRecord("compaction", 1)}, nil)
	if err := j.Message(3, &msgs[3], convo.UsageSum{Calls: 2}, 9, true); err != nil {
		t.Fatal(err)
	}
	crash(s)
	o := reopen(t, r, s)
	wantMessages(t, o.Messages(), msgs)
	rec := o.Recovered()
	if rec == nil || rec.MessageStart != 3 || rec.Messages != 1 || len(o.Timings()) != 1 || o.Timings()[0].MessageStartIndex != Some(0) {
		t.Fatalf("recovered %+v, timings %+v", rec, o.Timings())
	}

	// A journal all of whose messages are committed adds nothing.
	j2, msgs2 := journalRound(t, o, 1, 2)
	_ = j2
	mustCommit(t, o, append(o.Messages(), msgs2[:2]...), nil, nil)
	crash(o)
	o2 := reopen(t, r, s)
	if len(o2.Messages()) != 6 || o2.Recovered() != nil || len(o2.Timings()) != 1 {
		t.Fatalf("a fully committed journal was applied: %d messages, %+v", len(o2.Messages()), o2.Recovered())
	}
}
