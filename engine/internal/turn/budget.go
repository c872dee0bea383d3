package turn

import (
	"fmt"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// Budgets (docs/protocol.md `session/set_budget`): a model request is
// sent only if its tokens, by the estimate the context budget uses, plus
// the answer's maximum, fit every limit the session has. Prompt limits
// count the calls of the current run; session limits the whole ledger.

// Need is what one request would use at most: Bound, an upper bound of
// its input tokens needing no tokenizer; Exact, their count (nil: the
// bound is all there is); MaxOut, the answer's maximum.
type Need struct {
	Bound  int
	Exact  func() int
	MaxOut int
}

// Prices are a model's prices in dollars per million tokens (config.json;
// engine.Prices converts to it).
type Prices struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
}

// Spend is what a budget check compares a request's need with: the
// session's budgets, the model (named "provider/id" in what a refusal
// says) and its prices (nil: none), the session's usage and the run's.
// InRun says whether the request belongs to a run, which the prompt
// limits cover.
type Spend struct {
	Budget store.Budget
	Model  string
	Prices *Prices
	Total  convo.UsageSum
	Run    convo.UsageSum
	InRun  bool
}

// Over says which limit a request of need could exceed, "" when none.
// The tokenizer runs only when the bound would exceed one, as for the
// context budget (Fit).
func (s *Spend) Over(need Need) string {
	why := s.over(need.Bound+need.MaxOut, need.MaxOut)
	if why != "" && need.Exact != nil {
		why = s.over(need.Exact()+need.MaxOut, need.MaxOut)
	}
	return why
}

// over says which limit a request of tokens (input and the answer's
// maximum, maxOut of them output) would exceed, "" when none.
func (s *Spend) over(tokens, maxOut int) string {
	b, total, run := &s.Budget, &s.Total, &s.Run
	if l := b.SessionTokens; l.Set && total.TotalTokens+tokens > l.Value {
		return fmt.Sprintf("the session has used %d tokens and the request could use %d more; its budget is %d (sessionTokens)", total.TotalTokens, tokens, l.Value)
	}
	if l := b.PromptTokens; s.InRun && l.Set && run.TotalTokens+tokens > l.Value {
		return fmt.Sprintf("the prompt has used %d tokens and the request could use %d more; its budget is %d (promptTokens)", run.TotalTokens, tokens, l.Value)
	}
	costs := []struct {
		name string
		l    store.Opt[float64]
		used *convo.UsageSum
		on   bool
	}{{"sessionCost", b.SessionCost, total, true}, {"promptCost", b.PromptCost, run, s.InRun}}
	for _, c := range costs {
		if !c.on || !c.l.Set {
			continue
		}
		if s.Prices == nil {
			return fmt.Sprintf("model %s has no prices in config.json, so the %s budget cannot be checked", s.Model, c.name)
		}
		if c.used.Unpriced > 0 {
			return fmt.Sprintf("%d earlier calls had no prices, so the %s budget cannot be checked", c.used.Unpriced, c.name)
		}
		// Every input token at the dearest input price (fresh, cached or
		// written to the cache): an upper bound, like the token estimate.
		p := s.Prices
		in := max(p.Input, p.CacheRead, p.CacheWrite)
		cost := (float64(tokens-maxOut)*in + float64(maxOut)*p.Output) / 1e6
		if c.used.Cost+cost > c.l.Value {
			return fmt.Sprintf("the cost so far is %.6g and the request could cost %.6g more; the budget is %.6g (%s)", c.used.Cost, cost, c.l.Value, c.name)
		}
	}
	return ""
}

// SimpleNeed is the need of a request without tools whose messages are
// all its own (titles, compaction summaries).
func SimpleNeed(req *provider.Request, tok *Counter) Need {
	bound := Bound(req.System)
	for i := range req.Messages {
		bound += MessageBound(&req.Messages[i])
	}
	return Need{Bound: bound, MaxOut: req.MaxOutputTokens, Exact: func() int {
		n := tok.Count(req.System)
		for i := range req.Messages {
			n += tok.MessageTokens(&req.Messages[i])
		}
		return n
	}}
}
