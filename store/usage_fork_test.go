package store

import (
	"fmt"
	"testing"

	"github.com/loopdev/loop/convo"
)

// The header's usage ledger holds calls no prompt timing holds: an
// imported conversation's (the engine totals its assistant messages' usage
// and saves it with its next write), or one written before timings carried
// usage. A rewind that drops only the last run keeps them: the total after
// it is the total before that run.
func TestARewindKeepsTheUsageOfCallsNoTimingHolds(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// An imported conversation: 4 calls, no timings.
	imported := convo.UsageSum{Input: 500, Output: 100, TotalTokens: 600, Calls: 4}
	mustCommit(t, s, history(2), nil, func(h *Header) { h.Usage.UsageSum = imported })
	// Two runs of Loop, each with its timing and usage.
	run := func(i int) TimingAt {
		return TimingAt{Index: i - 2, Timing: PromptTiming{
			ID: fmt.Sprintf("run-%d", i), UserMessageIndex: i, MessageStartIndex: Some(4 * i), MessageEndIndex: Some(4*i + 4),
			StartedAt: int64(1000 * i), FinishedAt: Some(int64(1000*i + 500)),
			Usage: convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2},
		}}
	}
	for i := 2; i < 4; i++ {
		tm := run(i)
		mustCommit(t, s, history(i+1), nil, func(h *Header) { h.Usage.UsageSum.Add(tm.Timing.Usage) }, tm)
	}
	before := s.Header().Usage.Calls // 4 imported + 2 + 2
	if before != 8 {
		t.Fatalf("usage before: %d calls, want 8", before)
	}
	if _, err := s.Rewind(12); err != nil { // the last run goes
		t.Fatal(err)
	}
	if got := s.Header().Usage.UsageSum; got.Calls != 6 || got.Input != 750 {
		t.Fatalf("usage after the last run was rewound away: %+v, want the 4 imported calls and the first run's 2 (6 calls, 750 input)", got)
	}
}

func TestAForkKeepsTheUsageOfCallsNoTimingHolds(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	imported := convo.UsageSum{Input: 500, Output: 100, TotalTokens: 600, Calls: 4}
	mustCommit(t, s, history(2), nil, func(h *Header) { h.Usage.UsageSum = imported })
	for i := 2; i < 4; i++ {
		tm := TimingAt{Index: i - 2, Timing: PromptTiming{
			ID: fmt.Sprintf("run-%d", i), UserMessageIndex: i, MessageStartIndex: Some(4 * i), MessageEndIndex: Some(4*i + 4),
			StartedAt: int64(1000 * i), FinishedAt: Some(int64(1000*i + 500)),
			Usage: convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2},
		}}
		mustCommit(t, s, history(i+1), nil, func(h *Header) { h.Usage.UsageSum.Add(tm.Timing.Usage) }, tm)
	}
	// A title call of the parent's own.
	title := convo.UsageSum{Input: 10, Output: 5, TotalTokens: 15, Calls: 1}
	if err := s.SaveMeta(func(h *Header) { h.Usage.Title.Add(title); h.Usage.UsageSum.Add(title) }); err != nil {
		t.Fatal(err)
	}
	f, err := s.Fork(12, "") // the imported part and the first run
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Header().Usage; got.Calls != 6 || got.Input != 750 || !got.Title.IsZero() {
		t.Fatalf("the fork's usage: %+v, want the 4 imported calls and the first run's 2 (6 calls, 750 input), no title calls", got)
	}
}
