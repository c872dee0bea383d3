package store

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/storetest"
)

// forkTimings are one finished timing per prompt of history(rounds).
func forkTimings(rounds int) []TimingAt {
	var out []TimingAt
	for i := range rounds {
		out = append(out, TimingAt{Index: i, Timing: PromptTiming{
			ID: "run-" + string(rune('a'+i)), UserMessageIndex: i, MessageStartIndex: Some(4 * i), MessageEndIndex: Some(4*i + 4),
			StartedAt: int64(1000 * i), FinishedAt: Some(int64(1000*i + 500)),
		}})
	}
	return out
}

// storedWith makes a stored session holding history(rounds) with a timing
// per prompt.
func storedWith(t *testing.T, r *Root, cwd string, rounds int) *Session {
	t.Helper()
	s, err := r.Create("", cwd)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(rounds), nil, func(h *Header) { h.Title = "parent" }, forkTimings(rounds)...)
	return s
}

// mustFork forks s at k with title, failing the test on an error.
func mustFork(t testing.TB, s *Session, k int, title string) *Session {
	t.Helper()
	f, err := s.Fork(k, title)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestForkSharesItsParentsMessagesWithoutCopying(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	s := storedWith(t, r, cwd, 3)
	defer s.Close()
	f := mustFork(t, s, 8, "")
	defer f.Close()
	if got := fileSize(t, filepath.Join(f.Dir(), messagesFile)); got != 0 {
		t.Fatalf("the fork's messages.jsonl holds %d bytes, want 0 (nothing copied)", got)
	}
	h := f.Header()
	if h.Version != ForkFormatVersion || h.Parent == nil || h.Parent.SessionID != s.ID() || h.Parent.MessageCount != 8 || h.Parent.Timings != 2 {
		t.Fatalf("fork header: version %d parent %+v", h.Version, h.Parent)
	}
	if h.MessageCount != 8 || h.UserMessageCount != 2 || h.Title != "parent" || h.Usage.Calls != 0 {
		t.Fatalf("fork header counts: %+v", h)
	}
	wantMessages(t, f.Messages(), history(3)[:8])

	// The fork goes on on its own; the parent does not change.
	more := append(history(3)[:8:8], prompt(7)...)
	mustCommit(t, f, more, nil, nil, TimingAt{Index: 2, Timing: forkTimings(3)[2].Timing})
	o := reopen(t, r, f)
	wantMessages(t, o.Messages(), more)
	if n := len(o.Timings()); n != 3 {
		t.Fatalf("reopened fork has %d timings, want 3", n)
	}
	p := reopen(t, r, s)
	wantMessages(t, p.Messages(), history(3))
	if got := r.mustReadMessages(t, f.ID(), 6, 10); len(got) != 4 || got[2].Role != "user" {
		t.Fatalf("ReadMessages of a fork: %+v", got)
	}
}

func (r *Root) mustReadMessages(t *testing.T, id string, from, to int) []convo.Message {
	t.Helper()
	got, err := r.ReadMessages("", id, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestForkOfAForkReadsTheWholeChain(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := mustFork(t, s, 12, "first")
	defer f.Close()
	grown := append(history(3), prompt(5)...)
	mustCommit(t, f, grown, nil, nil)
	g := mustFork(t, f, 13, "second")
	defer g.Close()
	o := reopen(t, r, g)
	wantMessages(t, o.Messages(), grown[:13])
	if h := o.Header(); h.Parent.SessionID != f.ID() || h.Title != "second" {
		t.Fatalf("fork of a fork: %+v", h.Parent)
	}
}

func TestForkRefusesACountOutOfRangeOrSplittingToolCalls(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 2)
	defer s.Close()
	for _, k := range []int{-1, 9, 2, 6} { // 2 and 6 are tool results
		if _, err := s.Fork(k, ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("fork at %d: %v, want ErrInvalid", k, err)
		}
		if _, err := s.Rewind(k); !errors.Is(err, ErrInvalid) {
			t.Fatalf("rewind to %d: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := s.Rewind(8); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rewind to the whole history: %v, want ErrInvalid", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(s.Dir()))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != s.ID() {
			t.Fatalf("a refused fork left %s", e.Name())
		}
	}
	wantMessages(t, reopen(t, r, s).Messages(), history(2))
}

func TestDeletingAParentGivesItsForksTheirPart(t *testing.T) {
	for _, how := range []string{"handle", "root"} {
		t.Run(how, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s := storedWith(t, r, t.TempDir(), 3)
			f := mustFork(t, s, 8, "")
			defer f.Close()
			g := mustFork(t, f, 4, "")
			g.Close()
			var err error
			if how == "handle" {
				err = s.Delete()
			} else {
				s.Close()
				err = r.DeleteSession("", s.ID())
			}
			if err != nil {
				t.Fatal(err)
			}
			wantMessages(t, reopen(t, r, f).Messages(), history(3)[:8])
			if !exists(r.fs, filepath.Join(f.Dir(), baseDirName, headerFile)) {
				t.Fatal("the fork has no base")
			}
			// The fork's own fork reads through it, and the open handle
			// of the fork still commits.
			o, err := r.Open("", g.ID())
			if err != nil {
				t.Fatal(err)
			}
			wantMessages(t, o.Messages(), history(3)[:4])
			o.Close()
			mustCommit(t, f, append(history(3)[:8:8], prompt(9)...), nil, nil)
			wantMessages(t, reopen(t, r, f).Messages(), append(history(3)[:8:8], prompt(9)...))
			// Deleting the fork with its base leaves nothing behind.
			if err := f.Delete(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRewindKeepsWhatItDroppedAsAFork(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	cp := &Checkpoint{ID: "cp1", Summary: "the first two prompts", MessageCount: 8, TokensBefore: 900, CreatedAt: 5}
	if err := s.CommitCheckpoint(s.Messages(), cp, func(h *Header) { h.Unread = true }); err != nil {
		t.Fatal(err)
	}
	before := s.Header()
	forkID, err := s.Rewind(4)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header()
	if h.MessageCount != 4 || h.UserMessageCount != 1 || h.Unread || h.Compaction != nil || len(s.Timings()) != 1 {
		t.Fatalf("rewound header: %+v, %d timings", h, len(s.Timings()))
	}
	if LatestCheckpoint(s.Runtime()) != nil {
		t.Fatal("the checkpoint past the rewind is still in effect")
	}
	wantMessages(t, s.Messages(), history(3)[:4])

	// What was dropped is a fork holding the whole history.
	f, err := r.Open("", forkID)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, f.Messages(), history(3))
	fh := f.Header()
	if fh.Parent == nil || fh.Parent.SessionID != s.ID() || fh.Parent.MessageCount != 4 || fh.Usage != before.Usage || fh.Compaction == nil || len(f.Timings()) != 3 || !fh.Unread {
		t.Fatalf("the fork: %+v, %d timings", fh, len(f.Timings()))
	}
	if got := fileSize(t, filepath.Join(f.Dir(), messagesFile)); got == 0 {
		t.Fatal("the fork holds none of the dropped messages")
	}
	f.Close()

	// The rewound session goes on from its prefix; both reopen as they are.
	next := append(history(3)[:4:4], prompt(8)...)
	mustCommit(t, s, next, nil, nil, TimingAt{Index: 1, Timing: forkTimings(2)[1].Timing})
	wantMessages(t, reopen(t, r, s).Messages(), next)
	if n := len(reopen(t, r, s).Timings()); n != 2 {
		t.Fatalf("%d timings after the rewind and a commit, want 2", n)
	}
	o, err := r.Open("", forkID)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(3))

	// A second rewind below the first fork's point gives that fork a base.
	if _, err := s.Rewind(0); err != nil {
		t.Fatal(err)
	}
	if !exists(r.fs, filepath.Join(o.Dir(), baseDirName, headerFile)) {
		t.Fatal("the first fork has no base after a rewind below its point")
	}
	o2, err := r2(t, r).Open("", forkID)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, o2.Messages(), history(3))
}

func r2(t *testing.T, r *Root) *Root {
	t.Helper()
	o, err := OpenRoot(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// scopeSessions lists the session directories of a scope (no dot names).
func scopeSessions(t *testing.T, scope string) []string {
	t.Helper()
	entries, err := os.ReadDir(scope)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// crashAt makes operation n (counted from 0) of ffs and every one after it
// fail, as if the process died just before it; it returns a function that
// disarms and says whether operation n was reached.
func crashAt(ffs *storetest.FaultFS, n int) func() bool {
	var mu sync.Mutex
	seen := 0
	ffs.Arm(func(op, path string) *storetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen > n {
			return &storetest.Fault{Err: storetest.ErrInjected}
		}
		return nil
	})
	return func() bool {
		ffs.Arm(nil)
		mu.Lock()
		defer mu.Unlock()
		return seen > n
	}
}

// TestRewindIsAtomicAtEveryStep crashes a rewind before each of its file
// system operations in turn and opens the data root again: either the
// rewind happened (the session holds its prefix, the fork is in the scope
// with the whole history) or it did not (the session is as it was and no
// fork is visible).
func TestRewindIsAtomicAtEveryStep(t *testing.T) {
	for n := 0; ; n++ {
		r, ffs := newTestRoot(t)
		s := storedWith(t, r, t.TempDir(), 3)
		// A fork past the rewind's point, so the rewind gives it a base.
		f := mustFork(t, s, 12, "")
		f.Close()
		scope := filepath.Dir(s.Dir())
		disarm := crashAt(ffs, n)
		_, rerr := s.Rewind(4)
		reached := disarm()
		s.Close()

		fresh := r2(t, r)
		o, err := fresh.Open("", s.ID())
		if err != nil {
			t.Fatalf("crash before op %d: reopen: %v", n, err)
		}
		var forks []string
		for _, id := range scopeSessions(t, scope) {
			if id != s.ID() && id != f.ID() {
				forks = append(forks, id)
			}
		}
		switch len(o.Messages()) {
		case 12:
			if len(forks) != 0 {
				t.Fatalf("crash before op %d: not rewound, but %v is visible", n, forks)
			}
		case 4:
			if len(forks) != 1 {
				t.Fatalf("crash before op %d: rewound, forks %v", n, forks)
			}
			d, err := fresh.Open("", forks[0])
			if err != nil {
				t.Fatalf("crash before op %d: the dropped fork: %v", n, err)
			}
			wantMessages(t, d.Messages(), history(3))
			d.Close()
		default:
			t.Fatalf("crash before op %d: %d messages", n, len(o.Messages()))
		}
		// The earlier fork reads its history whatever happened.
		ff, err := fresh.Open("", f.ID())
		if err != nil {
			t.Fatalf("crash before op %d: the earlier fork: %v", n, err)
		}
		wantMessages(t, ff.Messages(), history(3))
		ff.Close()
		o.Close()
		if !reached {
			if rerr != nil {
				t.Fatalf("no crash, rewind: %v", rerr)
			}
			if n < 10 {
				t.Fatalf("the rewind did only %d operations", n)
			}
			return
		}
	}
}

// TestForkAndParentDeletionAreAtomicAtEveryStep crashes a fork, and a
// deletion of a parent with forks, before each operation in turn: the
// fork is visible whole or not at all, and a fork always reads its whole
// history whether or not its parent is gone.
func TestForkAndParentDeletionAreAtomicAtEveryStep(t *testing.T) {
	for n := 0; ; n++ {
		r, ffs := newTestRoot(t)
		s := storedWith(t, r, t.TempDir(), 3)
		scope := filepath.Dir(s.Dir())
		disarm := crashAt(ffs, n)
		f, ferr := s.Fork(8, "")
		reached := disarm()
		if ferr == nil {
			f.Close()
		}
		for _, id := range scopeSessions(t, scope) {
			if id == s.ID() {
				continue
			}
			o, err := r2(t, r).Open("", id)
			if err != nil {
				t.Fatalf("crash before op %d of a fork: %s is visible but does not open: %v", n, id, err)
			}
			wantMessages(t, o.Messages(), history(3)[:8])
			o.Close()
		}
		if !reached {
			break
		}
		s.Close()
	}
	for n := 0; ; n++ {
		r, ffs := newTestRoot(t)
		s := storedWith(t, r, t.TempDir(), 3)
		f := mustFork(t, s, 8, "")
		f.Close()
		disarm := crashAt(ffs, n)
		derr := s.Delete()
		reached := disarm()
		s.Close()
		o, err := r2(t, r).Open("", f.ID())
		if err != nil {
			t.Fatalf("crash before op %d of a parent's deletion: the fork: %v (delete: %v)", n, err, derr)
		}
		wantMessages(t, o.Messages(), history(3)[:8])
		o.Close()
		if !reached {
			if derr != nil {
				t.Fatal(derr)
			}
			return
		}
	}
}

// TestKillDuringRewinds kills (kill -9) a process that rewinds a session
// over and over, at random points, and opens the data root again: the
// session holds a whole prefix, every fork the process reported is there
// with the whole history it dropped, and a fork it had not reported yet is
// there only if the session was rewound (its header is the commit point).
func TestKillDuringRewinds(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	reported := map[string]bool{}
	known := map[string]bool{} // forks found after earlier kills
	for k := range 6 {
		cmd := childCmd(t, "rewindloop", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_SESSION="+id)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		target, seen := 1+rng.IntN(4), 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || f[0] != "rewound" {
				t.Fatalf("child: %s", sc.Text())
			}
			reported[f[1]] = true
			if seen++; seen == target {
				break
			}
		}
		// Let the child run into the middle of a later rewind, then kill
		// it: where it is when killed is the point of the test.
		time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		cmd.Process.Kill()
		// What it reported before the kill is still in the pipe: a fork
		// it reported and went on from (committing past the rewind) must
		// not count as unreported.
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "rewound" {
				reported[f[1]] = true
			}
		}
		cmd.Wait()

		o, err := r.Open("", id)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		n := len(o.Messages())
		if n%4 != 0 || n == 0 {
			t.Fatalf("kill %d: %d messages", k, n)
		}
		wantMessages(t, o.Messages(), history(n/4))
		for _, f := range scopeSessions(t, filepath.Dir(o.Dir())) {
			if f == id {
				continue
			}
			if !reported[f] && !known[f] && n != 4 {
				t.Fatalf("kill %d: fork %s is visible, unreported, and the session holds %d messages", k, f, n)
			}
			fo, err := r.Open("", f)
			if err != nil {
				t.Fatalf("kill %d: fork %s: %v", k, f, err)
			}
			wantMessages(t, fo.Messages(), history(3))
			fo.Close()
			delete(reported, f)
			known[f] = true
		}
		if len(reported) > 0 {
			t.Fatalf("kill %d: reported forks missing: %v", k, reported)
		}
		o.Close()
	}
}

// TestAForksRecoveryFileHoldsItsWholeHistory: a recovery file of a fork
// is read back (ParseRecovery) as any session's, its history whole.
func TestAForksRecoveryFileHoldsItsWholeHistory(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 2)
	defer s.Close()
	f := mustFork(t, s, 4, "")
	defer f.Close()
	h, msgs, _, timings := f.Contents()
	data, err := EncodeRecovery(&Recovery{SessionID: f.ID(), Cwd: h.Cwd, Error: "disk full", Header: h, Timings: timings, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), RecoveryName(f.ID(), 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := ParseRecovery(data, path)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, rec.Messages, history(2)[:4])
	if rec.Header.Parent != nil || rec.Header.Version != FormatVersion {
		t.Fatalf("recovery header: version %d parent %+v", rec.Header.Version, rec.Header.Parent)
	}
}

// TestForkInsideItsParentsPartAndRewindBelowIt forks a fork at a point in
// the part it shares with its own parent, and rewinds a fork below that
// part: both read the right messages, checked against the checksums.
func TestForkInsideItsParentsPartAndRewindBelowIt(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := mustFork(t, s, 12, "")
	defer f.Close()
	mustCommit(t, f, append(history(3), prompt(7)...), nil, nil)
	g := mustFork(t, f, 4, "")
	wantMessages(t, reopen(t, r, g).Messages(), history(3)[:4])
	g.Close()
	d, err := f.Rewind(8)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, reopen(t, r, f).Messages(), history(3)[:8])
	o, err := r2(t, r).Open("", d)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, o.Messages(), append(history(3), prompt(7)...))
	o.Close()
	mustCommit(t, f, append(history(3)[:8:8], prompt(9)...), nil, nil)
	wantMessages(t, reopen(t, r, f).Messages(), append(history(3)[:8:8], prompt(9)...))
}

// A rewind whose fork could not be moved into the scope keeps it waiting
// inside the session's directory (pendingFork); a later rewind tries the
// move again and, while it still fails, is refused: it never names a
// fork of its own over the waiting one, whose dropped history the sweep
// of leftovers would then delete.
func TestARewindWaitsForTheForkAnEarlierRewindCouldNotMove(t *testing.T) {
	r, ffs := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	ffs.Arm(func(op, path string) *storetest.Fault {
		if op == "rename" && strings.Contains(filepath.Base(path), forkDirPrefix) {
			return &storetest.Fault{Err: storetest.ErrInjected}
		}
		return nil
	})
	first, err := s.Rewind(8)
	if err != nil {
		t.Fatal(err)
	}
	if s.Header().PendingFork != first {
		t.Fatalf("pendingFork %q, want the unmoved fork %q", s.Header().PendingFork, first)
	}
	mustCommit(t, s, history(3), nil, nil)
	if _, err := s.Rewind(4); err == nil {
		t.Fatal("a rewind named its fork over one still waiting to be moved")
	}
	if !exists(s.fs, filepath.Join(s.dir, forkDirPrefix+first)) {
		t.Fatal("the waiting fork's directory is gone")
	}
	ffs.Arm(nil)
	if _, err := s.Rewind(4); err != nil {
		t.Fatalf("the rewind once the waiting fork could move: %v", err)
	}
	f, err := r.Open("", first)
	if err != nil {
		t.Fatalf("the first rewind's fork: %v", err)
	}
	defer f.Close()
	wantMessages(t, f.Messages(), history(3))
}
