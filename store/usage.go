package store

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

func (u *UsageSum) validate() error {
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

func (u *SessionUsage) validate() error {
	for _, s := range []*UsageSum{&u.UsageSum, &u.Title, &u.Compaction} {
		if err := s.validate(); err != nil {
			return err
		}
	}
	return nil
}

// Budget is a session's limits on tokens and cost (docs/protocol.md
// `session/set_budget`); an unset limit does not apply.
type Budget struct {
	SessionTokens Opt[int]
	SessionCost   Opt[float64]
	PromptTokens  Opt[int]
	PromptCost    Opt[float64]
}

// IsZero reports whether no limit is set.
func (b *Budget) IsZero() bool { return *b == Budget{} }

// Validate checks that every set limit is a non-negative number.
func (b *Budget) Validate() error {
	for name, v := range map[string]Opt[int]{"sessionTokens": b.SessionTokens, "promptTokens": b.PromptTokens} {
		if v.Set && v.Value < 0 {
			return fmt.Errorf("budget %s %d is negative", name, v.Value)
		}
	}
	for name, v := range map[string]Opt[float64]{"sessionCost": b.SessionCost, "promptCost": b.PromptCost} {
		if v.Set && (v.Value < 0 || math.IsNaN(v.Value) || math.IsInf(v.Value, 0)) {
			return fmt.Errorf("budget %s %v is not a non-negative number", name, v.Value)
		}
	}
	return nil
}

// usageSumRecord is a UsageSum on disk; cost and unpriced are left out
// when zero.
type usageSumRecord struct {
	Input       int     `json:"input"`
	Output      int     `json:"output"`
	CacheRead   int     `json:"cacheRead"`
	CacheWrite  int     `json:"cacheWrite"`
	TotalTokens int     `json:"totalTokens"`
	Calls       int     `json:"calls"`
	Cost        float64 `json:"cost,omitempty"`
	Unpriced    int     `json:"unpriced,omitempty"`
}

// sessionUsageRecord is header.json's usage member: fixed in size however
// many calls the session made.
type sessionUsageRecord struct {
	usageSumRecord
	Title      *usageSumRecord `json:"title,omitempty"`
	Compaction *usageSumRecord `json:"compaction,omitempty"`
}

func usageSumRecordOf(u *UsageSum) *usageSumRecord {
	if u.IsZero() {
		return nil
	}
	r := usageSumRecord(*u)
	return &r
}

func (r *usageSumRecord) sum() UsageSum {
	if r == nil {
		return UsageSum{}
	}
	return UsageSum(*r)
}

func sessionUsageRecordOf(u *SessionUsage) *sessionUsageRecord {
	if *u == (SessionUsage{}) {
		return nil
	}
	return &sessionUsageRecord{usageSumRecord: usageSumRecord(u.UsageSum), Title: usageSumRecordOf(&u.Title), Compaction: usageSumRecordOf(&u.Compaction)}
}

func (r *sessionUsageRecord) usage() (SessionUsage, bool) {
	if r == nil {
		return SessionUsage{}, false
	}
	return SessionUsage{UsageSum: r.usageSumRecord.sum(), Title: r.Title.sum(), Compaction: r.Compaction.sum()}, true
}

// budgetRecord is header.json's budget member; unset limits are left out.
type budgetRecord struct {
	SessionTokens *int     `json:"sessionTokens,omitempty"`
	SessionCost   *float64 `json:"sessionCost,omitempty"`
	PromptTokens  *int     `json:"promptTokens,omitempty"`
	PromptCost    *float64 `json:"promptCost,omitempty"`
}

func budgetRecordOf(b *Budget) *budgetRecord {
	if b.IsZero() {
		return nil
	}
	return &budgetRecord{SessionTokens: b.SessionTokens.Ptr(), SessionCost: b.SessionCost.Ptr(), PromptTokens: b.PromptTokens.Ptr(), PromptCost: b.PromptCost.Ptr()}
}

func (r *budgetRecord) budget() Budget {
	if r == nil {
		return Budget{}
	}
	return Budget{SessionTokens: OptOf(r.SessionTokens), SessionCost: OptOf(r.SessionCost), PromptTokens: OptOf(r.PromptTokens), PromptCost: OptOf(r.PromptCost)}
}
