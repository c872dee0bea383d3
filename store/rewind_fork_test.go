package store

import (
	"testing"

	"github.com/loopdev/loop/convo"
)

// A fork that ran prompts of its own (timing lines in its own
// timings.jsonl, at indexes past parent.timings) and is then rewound below
// the part it shares with its parent must still open: the rewind lowers
// parent.timings, and its own timing lines must not then read as a gap.
func TestAForkWithItsOwnTimingsRewoundBelowItsParentsPartOpens(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := mustFork(t, s, 12, "")
	defer f.Close()
	// The fork's own prompt, with its timing at index 3 (parent.timings 3).
	own := forkTimings(4)[3]
	mustCommit(t, f, append(history(3), prompt(3)...), nil, nil, own)
	if _, err := f.Rewind(4); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Timings()); n != 1 {
		t.Fatalf("the rewound fork has %d timings, want 1", n)
	}
	o, err := r2(t, r).OpenDir(f.Dir())
	if err != nil {
		t.Fatalf("the fork rewound below its parent's part does not open: %v", err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(1))
	if n := len(o.Timings()); n != 1 {
		t.Fatalf("reopened: %d timings, want 1", n)
	}
}

// Two rewinds of a fresh fork, each below the part it shares with its
// parent (the chat's /undo twice right after /fork), leave a fork that
// opens: the first rewind's cut must not read as a cut past the timings
// the second one leaves.
func TestAForkRewoundTwiceBelowItsParentsPartOpens(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := mustFork(t, s, 12, "")
	defer f.Close()
	if _, err := f.Rewind(8); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Rewind(4); err != nil {
		t.Fatal(err)
	}
	o, err := r2(t, r).OpenDir(f.Dir())
	if err != nil {
		t.Fatalf("the fork rewound twice does not open: %v", err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(1))
}

// A fork rewound below the part it shares with its parent still reads
// timings of its parent past that part (its own timing lines fold over
// them, then its cut drops them): it opens, continues and opens again
// after a restart, also once its parent is rewound to a point that keeps
// the fork's messages but cuts those timings, and once its parent is
// deleted; the fork of what its rewind dropped opens whole throughout.
func TestAForkRewoundBelowItsParentsPartOpensAfterItsParentIsRewoundAndDeleted(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	f := mustFork(t, s, 12, "")
	tm := forkTimings(4)
	grown := append(history(3), prompt(3)...)
	mustCommit(t, f, grown, nil, nil, tm[3])
	dropped, err := f.Rewind(4)
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Header().Parent; p == nil || p.MessageCount != 4 {
		t.Fatalf("the rewound fork's parent: %+v", p)
	}
	// The fork continues from its rewound point, with a timing of its own.
	next := TimingAt{Index: 1, Timing: tm[1].Timing}
	next.Timing.ID = "run-again"
	mustCommit(t, f, history(2), nil, nil, next)
	check := func(when string) {
		t.Helper()
		o, err := r2(t, r).OpenDir(f.Dir())
		if err != nil {
			t.Fatalf("%s: the rewound fork does not open: %v", when, err)
		}
		wantMessages(t, o.Messages(), history(2))
		wantTimings(t, when+": the rewound fork", o.Timings(), tm[0].Timing, next.Timing)
		o.Close()
		d, err := r2(t, r).Open("", dropped)
		if err != nil {
			t.Fatalf("%s: the fork of what the rewind dropped does not open: %v", when, err)
		}
		wantMessages(t, d.Messages(), grown)
		wantTimings(t, when+": the dropped fork", d.Timings(), tm[0].Timing, tm[1].Timing, tm[2].Timing, tm[3].Timing)
		d.Close()
	}
	check("after the rewind")
	// The parent keeps 8 messages, more than the fork's 4, but only 2 of
	// the 3 timings the fork's lines fold over.
	if _, err := s.Rewind(8); err != nil {
		t.Fatal(err)
	}
	check("after the parent's rewind")
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	check("after the parent's deletion")
	f.Close()
}

// A fork whose parent is gone reads its part from its base; rewound below
// that part (twice, as /undo twice does), it still opens after a restart,
// and so do the forks of what each rewind dropped.
func TestAForkReadingItsBaseRewoundBelowItsPartOpens(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	f := mustFork(t, s, 12, "")
	defer f.Close()
	tm := forkTimings(4)
	grown := append(history(3), prompt(3)...)
	mustCommit(t, f, grown, nil, nil, tm[3])
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	first, err := f.Rewind(8)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.Rewind(4)
	if err != nil {
		t.Fatal(err)
	}
	o := reopen(t, r, f)
	wantMessages(t, o.Messages(), history(1))
	wantTimings(t, "the fork rewound twice", o.Timings(), tm[0].Timing)
	for _, d := range []struct {
		id   string
		msgs []convo.Message
		n    int
	}{{first, grown, 4}, {second, history(2), 2}} {
		o, err := r2(t, r).Open("", d.id)
		if err != nil {
			t.Fatalf("the fork of what a rewind dropped: %v", err)
		}
		wantMessages(t, o.Messages(), d.msgs)
		if got := len(o.Timings()); got != d.n {
			t.Fatalf("the fork of what a rewind dropped: %d timings, want %d", got, d.n)
		}
		o.Close()
	}
}
