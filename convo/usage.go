package convo

import (
	"fmt"
	"math"
)

// UsageSum totals the token accounting of model calls (docs/protocol.md,
// "Usage"). Cost is the cost of the priced calls only; Unpriced counts the
// calls whose model had no prices, so a total whose Unpriced is not zero
// has no known cost. It holds no pointers and compares with ==.
type UsageSum struct {
	Input       int
	Output      int
	CacheRead   int
	CacheWrite  int
	TotalTokens int
	Calls       int
	Cost        float64
	Unpriced    int
}

// Add adds o to u. A total only counts up, and never past what it can
// hold: a negative figure in o (a provider that reported one) counts as 0,
// and a sum that would overflow stays at the largest value (for the cost,
// the largest finite one), so that a header holding it is always valid
// (docs/storage.md, usage).
func (u *UsageSum) Add(o UsageSum) {
	u.Input = addCount(u.Input, o.Input)
	u.Output = addCount(u.Output, o.Output)
	u.CacheRead = addCount(u.CacheRead, o.CacheRead)
	u.CacheWrite = addCount(u.CacheWrite, o.CacheWrite)
	u.TotalTokens = addCount(u.TotalTokens, o.TotalTokens)
	u.Calls = addCount(u.Calls, o.Calls)
	u.Unpriced = addCount(u.Unpriced, o.Unpriced)
	if c := o.Cost; c > 0 && !math.IsInf(c, 0) {
		u.Cost = min(u.Cost+c, math.MaxFloat64)
	} else if math.IsInf(c, 1) {
		u.Cost = math.MaxFloat64
	}
}

// Sub takes o, a part of u counted earlier, out of u: each figure stays
// at 0 or above (a total saturated by Add, or one o was never part of,
// cannot go below nothing).
func (u *UsageSum) Sub(o UsageSum) {
	u.Input = subCount(u.Input, o.Input)
	u.Output = subCount(u.Output, o.Output)
	u.CacheRead = subCount(u.CacheRead, o.CacheRead)
	u.CacheWrite = subCount(u.CacheWrite, o.CacheWrite)
	u.TotalTokens = subCount(u.TotalTokens, o.TotalTokens)
	u.Calls = subCount(u.Calls, o.Calls)
	u.Unpriced = subCount(u.Unpriced, o.Unpriced)
	if c := o.Cost; c > 0 && !math.IsInf(c, 0) {
		u.Cost = max(u.Cost-c, 0)
	}
}

// subCount is a-b for counts: b below 0 takes nothing, and the result is
// never below 0.
func subCount(a, b int) int {
	if b <= 0 {
		return a
	}
	return max(a-b, 0)
}

// addCount is a+b for counts: b below 0 adds nothing, and the sum
// saturates at the largest int.
func addCount(a, b int) int {
	switch {
	case b <= 0:
		return a
	case a > math.MaxInt-b:
		return math.MaxInt
	}
	return a + b
}

// CostKnown reports whether the total has a cost: at least one call, and
// every call priced.
func (u *UsageSum) CostKnown() bool { return u.Calls > 0 && u.Unpriced == 0 }

// IsZero reports whether nothing was counted.
func (u *UsageSum) IsZero() bool { return *u == UsageSum{} }

// Validate reports a total that no sum of calls can reach: a negative
// figure, or a cost that is not a finite non-negative number.
func (u *UsageSum) Validate() error {
	if u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0 || u.TotalTokens < 0 || u.Calls < 0 || u.Unpriced < 0 {
		return fmt.Errorf("negative usage")
	}
	if u.Cost < 0 || math.IsNaN(u.Cost) || math.IsInf(u.Cost, 0) {
		return fmt.Errorf("usage cost %v is not a non-negative number", u.Cost)
	}
	return nil
}

// SessionUsage is a session's usage ledger: every model call of the
// session in the totals, and the background calls (titles, compaction
// summaries) also apart. header.json holds it, so lists read it without
// opening the logs.
type SessionUsage struct {
	UsageSum
	Title      UsageSum // title generation calls
	Compaction UsageSum // compaction summary calls, automatic or asked for
}

// Add adds o to u.
func (u *SessionUsage) Add(o SessionUsage) {
	u.UsageSum.Add(o.UsageSum)
	u.Title.Add(o.Title)
	u.Compaction.Add(o.Compaction)
}

// Validate reports the first invalid total of the ledger.
func (u *SessionUsage) Validate() error {
	for _, s := range []*UsageSum{&u.UsageSum, &u.Title, &u.Compaction} {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	return nil
}
