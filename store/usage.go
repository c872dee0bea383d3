package store

import (
	"fmt"
	"math"

	"github.com/loopdev/loop/convo"
)

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

func usageSumRecordOf(u *convo.UsageSum) *usageSumRecord {
	if u.IsZero() {
		return nil
	}
	r := usageSumRecord(*u)
	return &r
}

func (r *usageSumRecord) sum() convo.UsageSum {
	if r == nil {
		return convo.UsageSum{}
	}
	return convo.UsageSum(*r)
}

func sessionUsageRecordOf(u *convo.SessionUsage) *sessionUsageRecord {
	if *u == (convo.SessionUsage{}) {
		return nil
	}
	return &sessionUsageRecord{usageSumRecord: usageSumRecord(u.UsageSum), Title: usageSumRecordOf(&u.Title), Compaction: usageSumRecordOf(&u.Compaction)}
}

func (r *sessionUsageRecord) usage() (convo.SessionUsage, bool) {
	if r == nil {
		return convo.SessionUsage{}, false
	}
	return convo.SessionUsage{UsageSum: r.usageSumRecord.sum(), Title: r.Title.sum(), Compaction: r.Compaction.sum()}, true
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
