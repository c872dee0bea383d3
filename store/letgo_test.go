package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Two Roots on one data root stand for two processes (relock_test.go).

// A writer that lets go while idle lets another handle take the lock and
// commit; Relock then picks up the other's history, title and timing in
// place, and the handle writes on from there.
func TestRelockPicksUpWhatAnotherWriterCommittedWhileLetGo(t *testing.T) {
	r, _ := newTestRoot(t)
	a, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustCommit(t, a, history(1), []RuntimeRecord{rtRecord("x", 1)}, nil, TimingAt{Index: 0, Timing: PromptTiming{ID: "run-0", StartedAt: 1}})
	if err := a.LetGo(); err != nil {
		t.Fatal(err)
	}
	if !a.ReadOnly() {
		t.Fatal("a handle that let go still writes")
	}
	b, err := openRoot(t, r.Dir()).Open("", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	if b.ReadOnly() {
		t.Fatalf("the other handle could not take the lock: %v", b.ReadOnlyReason())
	}
	mustCommit(t, b, history(2), []RuntimeRecord{rtRecord("x", 2)}, func(h *Header) { h.Title = "theirs" },
		TimingAt{Index: 1, Timing: PromptTiming{ID: "run-1", StartedAt: 2}})
	// Relock refuses while the other holds the lock, and changes nothing.
	if _, err := a.Relock(); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("relock while the other holds the lock: %v", err)
	}
	wantMessages(t, a.Messages(), history(1))
	b.Close()

	c, err := a.Relock()
	if err != nil {
		t.Fatal(err)
	}
	if c.From != len(history(1)) || !c.Changed || c.RuntimeFrom != 1 || c.Recovered != nil {
		t.Fatalf("caught %+v", c)
	}
	wantMessages(t, a.Messages(), history(2))
	if got := a.Header().Title; got != "theirs" {
		t.Fatalf("title %q", got)
	}
	if ts := a.Timings(); len(ts) != 2 || ts[1].ID != "run-1" {
		t.Fatalf("timings %+v", ts)
	}
	if rt := a.Runtime(); len(rt) != 2 {
		t.Fatalf("runtime %+v", rt)
	}
	// It holds the lock again and writes on.
	mustCommit(t, a, history(3), nil, nil)
	wantMessages(t, reopen(t, r, a).Messages(), history(3))
}

// Relock reads only what was appended past the handle's committed ranges:
// a byte of the old range that went bad on disk after the handle read it
// is not read again (an Open would refuse the log's checksum), so picking
// up another process's commit costs what it added, not the history.
func TestRelockReadsOnlyTheTailAnotherWriterAppended(t *testing.T) {
	r, _ := newTestRoot(t)
	a, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustCommit(t, a, history(2), nil, nil)
	if err := a.LetGo(); err != nil {
		t.Fatal(err)
	}
	b, err := openRoot(t, r.Dir()).Open("", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b, history(3), nil, nil)
	b.Close()
	path := filepath.Join(a.Dir(), messagesFile)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{'X'}, 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := a.Relock(); err != nil {
		t.Fatalf("relock read more than the tail: %v", err)
	}
	wantMessages(t, a.Messages(), history(3))
}

// A history the other writer did not extend (its ranges do not continue
// the handle's checksums) is not picked up: the handle stays read-only
// with ErrStale, and opening the session again reads it whole.
func TestRelockOfAHistoryRewrittenElsewhereIsStale(t *testing.T) {
	r, _ := newTestRoot(t)
	a, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustCommit(t, a, history(1), nil, nil)
	if err := a.LetGo(); err != nil {
		t.Fatal(err)
	}
	b, err := openRoot(t, r.Dir()).Open("", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b, history(2), nil, nil)
	b.Close()
	// The first round's bytes differ now: another history, same lengths.
	rewritten := prompt(0)
	rewritten[3].Content[0].Text = "answer X"
	other := append(rewritten, prompt(1)...)
	dir := t.TempDir()
	sc, err := OpenRoot(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := sc.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, o, other, nil, nil)
	for _, name := range []string{messagesFile, indexFile} {
		data, err := os.ReadFile(filepath.Join(o.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(a.Dir(), name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := o.Header()
	o.Close()
	cur, err := os.ReadFile(filepath.Join(a.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	hdr, _, err := parseHeaderTimings(cur, headerFile)
	if err != nil {
		t.Fatal(err)
	}
	hdr.MessagesBytes, hdr.MessagesCRC = h.MessagesBytes, h.MessagesCRC
	data, err := encodeHeader(&hdr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Dir(), headerFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Relock(); !errors.Is(err, ErrStale) {
		t.Fatalf("relock of a rewritten history: %v", err)
	}
	wantMessages(t, a.Messages(), history(1))
	if !a.ReadOnly() {
		t.Fatal("a stale handle writes")
	}
	again := reopen(t, r, a)
	wantMessages(t, again.Messages(), other)
}

// A writer that died in a run while the other handle had let go leaves its
// journal: the handle's Relock recovers the run as an open would, after
// the history the dead writer committed before it.
func TestRelockRecoversTheRunOfAWriterThatDiedHoldingTheLock(t *testing.T) {
	r, _ := newTestRoot(t)
	a, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustCommit(t, a, history(1), nil, nil)
	if err := a.LetGo(); err != nil {
		t.Fatal(err)
	}
	b, err := openRoot(t, r.Dir()).Open("", a.ID())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b, history(2), nil, nil)
	// The run of round 2 gets as far as its tool call's start; then the
	// process dies: its lock goes, its journal stays.
	journalRound(t, b, 2, 2)
	b.Close()

	c, err := a.Relock()
	if err != nil {
		t.Fatal(err)
	}
	if c.Recovered == nil || c.Recovered.RunID != runIDOf(2) || c.From != len(history(1)) {
		t.Fatalf("caught %+v (recovered %+v)", c, c.Recovered)
	}
	msgs := a.Messages()
	want := append(history(2), prompt(2)[:2]...)
	if len(msgs) != len(want)+1 {
		t.Fatalf("got %d messages, want %d and an error result", len(msgs), len(want))
	}
	wantMessages(t, msgs[:len(want)], want)
	if last := msgs[len(msgs)-1]; !last.IsError || last.Text() != InterruptedStartedText {
		t.Fatalf("the interrupted call's result: %+v", last)
	}
	if a.ReadOnly() {
		t.Fatalf("read-only after the recovery: %v", a.ReadOnlyReason())
	}
	// The journal is retired: another open finds nothing to recover.
	if data, err := os.ReadFile(filepath.Join(a.Dir(), journalFile)); err != nil || len(data) != 0 {
		t.Fatalf("journal after the recovery: %q, %v", data, err)
	}
}

// BenchmarkRelockPicksUpOneRound measures a Relock that picks up one round
// another writer committed, beside histories of different lengths: its
// cost is the round's, so the numbers stay flat as the history grows
// (go test -bench RelockPicksUp ./store/).
func BenchmarkRelockPicksUpOneRound(b *testing.B) {
	for _, rounds := range []int{10, 1000} {
		b.Run(fmt.Sprintf("history=%d", rounds), func(b *testing.B) {
			r, _ := newTestRoot(b)
			a, err := r.Create("", b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			msgs := history(rounds)
			mustCommit(b, a, msgs, nil, nil)
			if err := a.LetGo(); err != nil {
				b.Fatal(err)
			}
			r2, err := OpenRoot(r.Dir())
			if err != nil {
				b.Fatal(err)
			}
			o, err := r2.Open("", a.ID())
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			// The two handles take turns: each commits a round and lets go,
			// and the other's Relock picks it up.
			turn := []*Session{o, a}
			b.ResetTimer()
			for i := range b.N {
				w, next := turn[i%2], turn[(i+1)%2]
				b.StopTimer()
				msgs = append(msgs, prompt(rounds+i)...)
				mustCommit(b, w, msgs, nil, nil)
				if err := w.LetGo(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := next.Relock(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A fork's logs hold only its own messages (docs/storage.md, "Forks and
// rewinds"): Relock reads what another writer appended to them as it
// does a session's, instead of refusing it as stale and reading the
// whole history again.
func TestRelockPicksUpWhatAnotherWriterAppendedToAFork(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := mustFork(t, s, 8, "")
	defer f.Close()
	if err := f.LetGo(); err != nil {
		t.Fatal(err)
	}
	b, err := openRoot(t, r.Dir()).Open("", f.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := append(history(3)[:8:8], prompt(7)...)
	mustCommit(t, b, want, nil, nil)
	b.Close()
	c, err := f.Relock()
	if err != nil {
		t.Fatalf("relock of a fork another writer continued: %v", err)
	}
	if c.From != 8 || !c.Changed {
		t.Fatalf("caught %+v", c)
	}
	wantMessages(t, f.Messages(), want)
}

// A rewind's header names its fork until that fork is moved into the
// scope, which this handle then forgets (docs/storage.md, "Forks and
// rewinds"); taking the lock again after letting go is no change by
// another writer, and the handle writes on.
func TestAHandleThatRewoundTakesItsLockBackAfterLettingGo(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	if _, err := s.Rewind(8); err != nil {
		t.Fatal(err)
	}
	if err := s.LetGo(); err != nil {
		t.Fatal(err)
	}
	if err := s.TryWritable(); err != nil {
		t.Fatalf("taking the lock back after its own rewind: %v", err)
	}
	if err := s.LetGo(); err != nil {
		t.Fatal(err)
	}
	c, err := s.Relock()
	if err != nil || c.Changed {
		t.Fatalf("relock after its own rewind: %+v %v", c, err)
	}
	mustCommit(t, s, history(3), nil, nil)
}
