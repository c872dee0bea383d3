package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// Opening a fork costs about what opening its own history does (the
// issue's target: within 1.2x of its parent): a fork of a session's first
// prompt reads those messages, not the parent's whole later history. Here
// the same fork at 4 messages is opened with a parent of 8 and of 2,000
// messages, and the allocations compared (a count, not a time).
func TestOpeningAForkAtTheStartCostsWhatItsPartDoesNotItsParentsWholeHistory(t *testing.T) {
	openAllocs := func(rounds int) float64 {
		r, _ := newTestRoot(t)
		s := storedWith(t, r, t.TempDir(), rounds)
		f := mustFork(t, s, 4, "")
		id := f.ID()
		f.Close()
		s.Close()
		return testing.AllocsPerRun(3, func() {
			o, err := r.Open("", id)
			if err != nil {
				t.Fatal(err)
			}
			o.Close()
		})
	}
	small, large := openAllocs(2), openAllocs(500)
	t.Logf("allocations of an open of the fork: %.0f with a parent of 8 messages, %.0f with one of 2,000", small, large)
	if large > 2*small {
		t.Fatalf("opening a 4-message fork allocates %.0f times with a parent of 8 messages, %.0f with a parent of 2,000", small, large)
	}
}

// A fork reads of its parents only the part it shares, and exactly that
// part: the messages and the folded timings a whole read of the parent
// gives, for every fork point, through a parent that is itself a fork (read
// in part when the point is inside its own parent's part), whose parent's
// timings.jsonl replaces a timing, was cut by a rewind and appended past
// the cut, and again once the first parent is deleted and the middle one
// reads its part from a base.
func TestAForkReadsOfItsParentsExactlyThePartItShares(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tm := forkTimings(3)
	started := tm[0]
	started.Timing.ID, started.Timing.MessageEndIndex, started.Timing.FinishedAt = "run-a-started", Opt[int]{}, Opt[int64]{}
	mustCommit(t, s, history(1), nil, nil, started)
	mustCommit(t, s, history(1), nil, nil, tm[0]) // replaces timing 0
	mustCommit(t, s, history(2), nil, nil, tm[1])
	mustCommit(t, s, history(3), nil, nil, tm[2])
	if _, err := s.Rewind(8); err != nil { // a cut at timing 2
		t.Fatal(err)
	}
	again := tm[2]
	again.Timing.ID = "run-c-again"
	mustCommit(t, s, append(history(2), prompt(5)...), nil, nil, again)

	f := mustFork(t, s, 12, "")
	defer f.Close()
	own := TimingAt{Index: 3, Timing: PromptTiming{ID: "run-d", UserMessageIndex: 3, MessageStartIndex: Some(12), MessageEndIndex: Some(16), StartedAt: 4000, FinishedAt: Some(int64(4500))}}
	mustCommit(t, f, append(append(history(2), prompt(5)...), prompt(7)...), nil, nil, own)
	whole := reopen(t, r, f) // f read whole: what every fork of it must see of it
	var forks []*Session
	for k := 0; k <= 16; k += 4 {
		g := mustFork(t, f, k, "")
		g.Close()
		forks = append(forks, g)
	}
	check := func(when string) {
		t.Helper()
		for _, g := range forks {
			o := reopen(t, r, g)
			ref := o.Header().Parent
			wantMessages(t, o.Messages(), whole.Messages()[:ref.MessageCount])
			if got, want := o.Timings(), whole.Timings()[:ref.Timings]; (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, the fork at %d reads the timings\n%+v\nwant\n%+v", when, ref.MessageCount, got, want)
			}
		}
	}
	check("with its parents in place")
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	check("with the first parent deleted")
}

// A fork reads and checks its part of its parent, and that part only: a
// parent whose log holds fewer bytes than the part, or other lines in
// it, makes the fork malformed; a line damaged past the part is the
// parent's problem, found when the parent opens, not the fork's.
func TestAForkChecksThePartItReadsOfItsParent(t *testing.T) {
	damage := func(t *testing.T, at func(data []byte, line []int) []byte) (*Root, string, string) {
		r, _ := newTestRoot(t)
		s := storedWith(t, r, t.TempDir(), 3)
		f := mustFork(t, s, 4, "")
		f.Close()
		s.Close()
		mpath := filepath.Join(s.Dir(), messagesFile)
		data, err := os.ReadFile(mpath)
		if err != nil {
			t.Fatal(err)
		}
		var starts []int // where each line starts
		for i := range data {
			if i == 0 || data[i-1] == '\n' {
				starts = append(starts, i)
			}
		}
		if err := os.WriteFile(mpath, at(data, starts), 0o600); err != nil {
			t.Fatal(err)
		}
		return r, f.ID(), s.ID()
	}
	flip := func(i int) func([]byte, []int) []byte {
		return func(data []byte, starts []int) []byte {
			data[starts[i]+2] ^= 0x20 // a letter of the role member's name
			return data
		}
	}
	for _, c := range []struct {
		name      string
		at        func([]byte, []int) []byte
		forkOpens bool
	}{
		{"the log cut inside the part", func(data []byte, starts []int) []byte { return data[:starts[2]] }, false},
		{"a line of the part changed", flip(1), false},
		{"a line past the part changed", flip(9), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, fid, sid := damage(t, c.at)
			o, err := r2(t, r).Open("", fid)
			if c.forkOpens {
				if err != nil {
					t.Fatalf("the fork at 4: %v", err)
				}
				wantMessages(t, o.Messages(), history(1))
				o.Close()
				if p, err := r2(t, r).Open("", sid); !errors.Is(err, ErrMalformed) {
					if err == nil {
						p.Close()
					}
					t.Fatalf("the damaged parent opens: %v, want ErrMalformed", err)
				}
				return
			}
			if err == nil {
				o.Close()
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("the fork at 4: %v, want ErrMalformed", err)
			}
		})
	}
}

// The fold of a parent's timings that decodes only the fork's part reads
// each line's index and cut as encoding/json does (parseTimingLine) or
// leaves the line to it: a line that could hold another index or cut
// member, in any case or spelling, is decoded whole.
func TestTimingLineHeadAgreesWithDecodingOrDefers(t *testing.T) {
	enc, err := encodeTimings([]TimingAt{forkTimings(3)[2], {Index: 12, Timing: PromptTiming{ID: `a "quoted", {braced} id`, Usage: convo.UsageSum{Input: 5, Calls: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(enc), "\n")[:2]
	for _, c := range []struct {
		line string
		fast bool
	}{
		{lines[0], true},
		{lines[1], true},
		{string(cutLine(7)), true},
		{`{"index":3,"id":"x","cut":true}` + "\n", false},
		{`{"index":3,"id":"x","CUT":true}` + "\n", false},
		{`{"index":3,"id":"x","Index":1}` + "\n", false},
		{`{"index":3,"id":"x","\u0063ut":true}` + "\n", false},
		{`{"index":3,"usage":{"cut":1},"id":"x"}` + "\n", true},
		{`{"index":3,"id":"x"}`, false},
		{`{"index":03,"id":"x"}` + "\n", false},
		{`{"index":-1,"id":"x"}` + "\n", false},
		{`{"index":1234567890,"id":"x"}` + "\n", false},
		{`{"id":"x","index":3}` + "\n", false},
		{`{"index":3}` + "\n", false},
	} {
		index, cut, ok := timingLineHead([]byte(c.line))
		if ok != c.fast {
			t.Errorf("%q: read without decoding %v, want %v", c.line, ok, c.fast)
			continue
		}
		if !ok {
			continue
		}
		w, wcut, err := parseTimingLine([]byte(c.line), 1, timingsFile)
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if index != w.Index || cut != wcut {
			t.Errorf("%q: index %d, cut %v; decoded: %d, %v", c.line, index, cut, w.Index, wcut)
		}
	}
}

// A fork of a session written before timings.jsonl (its timings in
// header.json) reads its part's timings from there, at every point.
func TestAForkOfAnOldHeaderReadsItsTimingsFromIt(t *testing.T) {
	r, s := openLegacyGolden(t)
	msgs, timings := s.Messages(), s.Timings()
	for k := 0; k <= len(msgs); k++ {
		if CheckForkPoint(msgs, k) != nil {
			continue
		}
		f := mustFork(t, s, k, "")
		f.Close()
		o, err := r2(t, r).Open(goldenWorkspace, f.ID())
		if err != nil {
			t.Fatalf("the fork at %d: %v", k, err)
		}
		ref := o.Header().Parent
		wantMessages(t, o.Messages(), msgs[:k])
		if got := o.Timings()[:ref.Timings]; (len(got) > 0 || ref.Timings > 0) && !reflect.DeepEqual(got, timings[:ref.Timings]) {
			t.Fatalf("the fork at %d reads the timings\n%+v\nwant\n%+v", k, got, timings[:ref.Timings])
		}
		o.Close()
	}
	if !headerHolds(t, s, `"promptTimings":[`) {
		t.Fatal("the parent's timings left its header")
	}
}
