package turn

import (
	"testing"

	"github.com/loopdev/loop/convo"
)

// TestFitCountsAndCompactsOnlyWhenItMustAndItHelps checks the context
// budget's rule on its own: a request whose bound fits is sent uncounted
// (the tokenizer stays unloaded), the exact count decides otherwise, and
// a compaction is chosen only when automatic compaction is on and the
// messages a checkpoint keeps leave a summary MinSummaryTokens of room.
func TestFitCountsAndCompactsOnlyWhenItMustAndItHelps(t *testing.T) {
	const limit = 1000
	cases := []struct {
		name        string
		auto        bool
		bound       int
		exact       int
		cut, kept   int
		canCompact  bool
		want        Verdict
		counted     bool // the exact count was asked for
		askedToKeep bool // what a checkpoint keeps was asked for
	}{
		{name: "bound fits", bound: limit, want: Verdict{Send: true}},
		{name: "count fits", bound: limit + 1, exact: limit, want: Verdict{Send: true, Tokens: limit}, counted: true},
		{name: "too big, compaction off", bound: 5000, exact: 2000, canCompact: true, cut: 4, kept: 100,
			want: Verdict{Tokens: 2000}, counted: true},
		{name: "too big, nothing to compact", auto: true, bound: 5000, exact: 2000,
			want: Verdict{Tokens: 2000}, counted: true, askedToKeep: true},
		{name: "compaction leaves just enough room", auto: true, bound: 5000, exact: 2000, canCompact: true, cut: 4, kept: limit - MinSummaryTokens,
			want: Verdict{Compact: true, Cut: 4, Room: MinSummaryTokens, Tokens: 2000}, counted: true, askedToKeep: true},
		{name: "compaction would not help", auto: true, bound: 5000, exact: 2000, canCompact: true, cut: 4, kept: limit - MinSummaryTokens + 1,
			want: Verdict{Tokens: 2000, Why: "; compacting the earlier conversation would not make it fit"}, counted: true, askedToKeep: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counted, askedToKeep := false, false
			got := Fit{Limit: limit, Auto: c.auto}.Decide(c.bound, Counts{
				Exact: func() int { counted = true; return c.exact },
				Kept: func() (int, int, bool) {
					askedToKeep = true
					return c.cut, c.kept, c.canCompact
				},
			})
			if got != c.want || counted != c.counted || askedToKeep != c.askedToKeep {
				t.Fatalf("got %+v (counted %v, asked what a checkpoint keeps %v), want %+v (%v, %v)", got, counted, askedToKeep, c.want, c.counted, c.askedToKeep)
			}
		})
	}
}

func TestCompactionCutKeepsTheLatestTurnAndNeedsSomethingNew(t *testing.T) {
	u, a := convo.RoleUser, convo.RoleAssistant
	cases := []struct {
		roles []string
		prev  int
		cut   int
		ok    bool
	}{
		{roles: []string{u, a}},                            // only the latest turn
		{roles: []string{u, a, u, a}, cut: 2, ok: true},    // the first turn summarized
		{roles: []string{u, a, u, a, u}, cut: 4, ok: true}, // the latest user message starts what stays
		{roles: []string{u, a, u, a, u, a}, prev: 3},       // one message new since the checkpoint
		{roles: []string{u, a, u, a, u, a}, prev: 2, cut: 4, ok: true},
	}
	for _, c := range cases {
		hist := make([]convo.Message, len(c.roles))
		for i, r := range c.roles {
			hist[i] = convo.Message{Role: r}
		}
		cut, ok := CompactionCut(hist, c.prev)
		if cut != c.cut || ok != c.ok {
			t.Errorf("%v after %d: cut %d %v, want %d %v", c.roles, c.prev, cut, ok, c.cut, c.ok)
		}
	}
}
