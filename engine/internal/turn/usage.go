package turn

import (
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
)

// The usage ledger (docs/protocol.md, "Usage"): every model call a
// session makes is counted once, with its purpose. The engine keeps the
// live totals and the part no committed header holds yet; this file says
// what one call adds.

// CallUsage is one call's entry: its tokens, and its cost when the model
// has prices (p nil: none).
func CallUsage(p *Prices, u *convo.Usage) convo.UsageSum {
	sum := convo.UsageSum{Calls: 1}
	if u != nil {
		sum.Input, sum.Output, sum.CacheRead, sum.CacheWrite = u.Input, u.Output, u.CacheRead, u.CacheWrite
		sum.TotalTokens = u.TotalTokens
		if sum.TotalTokens == 0 {
			sum.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
		}
	}
	if p != nil {
		sum.Cost = (float64(sum.Input)*p.Input + float64(sum.Output)*p.Output +
			float64(sum.CacheRead)*p.CacheRead + float64(sum.CacheWrite)*p.CacheWrite) / 1e6
	} else {
		sum.Unpriced = 1
	}
	return sum
}

// Counted reports whether a call reached the provider as far as the ledger
// can tell: it answered, or it reported usage before it failed. A call
// refused before any response (a refused connection, an HTTP error) cost
// nothing and is not counted.
func Counted(u *convo.Usage, err error) bool {
	return err == nil || (u != nil && *u != convo.Usage{})
}

// Charge is what a call of purpose adds to the session's ledger: its
// entry in the totals and in its purpose's part; ofRun says whether it
// also counts for the run it happens in (the run's prompt timing and
// prompt budgets). Titles never do, since they run beside runs; main turns
// and compaction summaries while a run holds the session do.
func Charge(purpose string, sum convo.UsageSum) (d convo.SessionUsage, ofRun bool) {
	d = convo.SessionUsage{UsageSum: sum}
	switch purpose {
	case provider.PurposeTitle:
		d.Title = sum
	case provider.PurposeSummary:
		d.Compaction = sum
	}
	return d, purpose != provider.PurposeTitle
}

// OpenUsage is the ledger of a session as it opens: its header's totals
// (saved); for a session written before the ledger (no calls in its
// header), the totals of its assistant messages' usage, one call each,
// priced with today's config (prices, by provider and model id), to be
// saved with its next write. Titles and compaction summaries of such a
// session were never recorded.
func OpenUsage(saved convo.SessionUsage, history []convo.Message, prices func(provider, model string) *Prices) (total, unsaved convo.SessionUsage) {
	if saved.Calls > 0 {
		return saved, convo.SessionUsage{}
	}
	var d convo.SessionUsage
	for i := range history {
		msg := &history[i]
		if msg.Role != convo.RoleAssistant || msg.Usage == nil {
			continue
		}
		d.Add(convo.SessionUsage{UsageSum: CallUsage(prices(msg.Provider, msg.Model), msg.Usage)})
	}
	total = saved
	total.Add(d)
	return total, d
}
