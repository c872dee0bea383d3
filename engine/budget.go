package engine

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

// budgetNeed is what one request would use at most: bound, an upper bound
// of its input tokens needing no tokenizer; exact, their count (nil: the
// bound is all there is); maxOut, the answer's maximum.
type budgetNeed struct {
	bound  int
	exact  func() int
	maxOut int
}

// checkBudget refuses a request that could exceed a limit, with
// budget_exceeded. The tokenizer runs only when the bound would exceed
// one, as for the context budget (compact.go fitRequest). inRun says
// whether the request belongs to a run, which the prompt limits cover.
func (s *Session) checkBudget(m *Model, need budgetNeed, inRun bool) error {
	b := s.st.Header().Budget
	if b.IsZero() {
		return nil
	}
	s.mu.Lock()
	total := s.usage.UsageSum
	var run convo.UsageSum
	if r := s.state.run; inRun && r != nil {
		run = r.usage
	}
	s.mu.Unlock()
	why := overBudget(&b, m, &total, &run, inRun, need.bound+need.maxOut, need.maxOut)
	if why != "" && need.exact != nil {
		why = overBudget(&b, m, &total, &run, inRun, need.exact()+need.maxOut, need.maxOut)
	}
	if why != "" {
		return errorf(CodeBudgetExceeded, "the request was not sent: %s", why)
	}
	return nil
}

// overBudget says which limit a request of tokens (input and the answer's
// maximum, maxOut of them output) would exceed, "" when none.
func overBudget(b *store.Budget, m *Model, total, run *convo.UsageSum, inRun bool, tokens, maxOut int) string {
	if l := b.SessionTokens; l.Set && total.TotalTokens+tokens > l.Value {
		return fmt.Sprintf("the session has used %d tokens and the request could use %d more; its budget is %d (sessionTokens)", total.TotalTokens, tokens, l.Value)
	}
	if l := b.PromptTokens; inRun && l.Set && run.TotalTokens+tokens > l.Value {
		return fmt.Sprintf("the prompt has used %d tokens and the request could use %d more; its budget is %d (promptTokens)", run.TotalTokens, tokens, l.Value)
	}
	costs := []struct {
		name string
		l    store.Opt[float64]
		used *convo.UsageSum
		on   bool
	}{{"sessionCost", b.SessionCost, total, true}, {"promptCost", b.PromptCost, run, inRun}}
	for _, c := range costs {
		if !c.on || !c.l.Set {
			continue
		}
		if m.Cost == nil {
			return fmt.Sprintf("model %s/%s has no prices in config.json, so the %s budget cannot be checked", m.Provider, m.ID, c.name)
		}
		if c.used.Unpriced > 0 {
			return fmt.Sprintf("%d earlier calls had no prices, so the %s budget cannot be checked", c.used.Unpriced, c.name)
		}
		// Every input token at the dearest input price (fresh, cached or
		// written to the cache): an upper bound, like the token estimate.
		in := max(m.Cost.Input, m.Cost.CacheRead, m.Cost.CacheWrite)
		cost := (float64(tokens-maxOut)*in + float64(maxOut)*m.Cost.Output) / 1e6
		if c.used.Cost+cost > c.l.Value {
			return fmt.Sprintf("the cost so far is %.6g and the request could cost %.6g more; the budget is %.6g (%s)", c.used.Cost, cost, c.l.Value, c.name)
		}
	}
	return ""
}

// simpleNeed is the need of a request without tools whose messages are all
// its own (titles, compaction summaries).
func (s *Session) simpleNeed(req *provider.Request) budgetNeed {
	bound := tokenBound(req.System)
	for i := range req.Messages {
		bound += messageBound(&req.Messages[i])
	}
	return budgetNeed{bound: bound, maxOut: req.MaxOutputTokens, exact: func() int {
		n := s.e.tokens.count(req.System)
		for i := range req.Messages {
			n += s.e.tokens.messageTokens(&req.Messages[i])
		}
		return n
	}}
}

// saveUsage writes the header when the ledger holds unsaved usage: for
// calls that ended without a write of their own (a failed title or
// summary).
func (s *Session) saveUsage() {
	s.mu.Lock()
	none := s.unsaved == (convo.SessionUsage{}) || s.state.closed
	s.mu.Unlock()
	if none {
		return
	}
	if err := s.saveMeta(nil); err != nil {
		s.e.log.Warn("usage not saved", "session", s.id, "err", err)
	}
}

// defaultBudget is config.json's defaults.budget, which new sessions
// start with.
func (e *Engine) defaultBudget() store.Budget {
	return e.catalog().config.Defaults.Budget.Budget()
}

// BudgetChange is session/set_budget's change: for each limit, nil keeps
// it, a set Opt sets it, Clear removes it.
type BudgetChange struct {
	SessionTokens, PromptTokens *BudgetLimit[int]
	SessionCost, PromptCost     *BudgetLimit[float64]
}

// BudgetLimit is one limit of a BudgetChange: Clear, or Value.
type BudgetLimit[T any] struct {
	Value T
	Clear bool
}

func (l *BudgetLimit[T]) apply(o *store.Opt[T]) {
	switch {
	case l == nil:
	case l.Clear:
		*o = store.Opt[T]{}
	default:
		*o = store.Some(l.Value)
	}
}

// applyTo makes the change to b.
func (c *BudgetChange) applyTo(b *store.Budget) {
	c.SessionTokens.apply(&b.SessionTokens)
	c.SessionCost.apply(&b.SessionCost)
	c.PromptTokens.apply(&b.PromptTokens)
	c.PromptCost.apply(&b.PromptCost)
}

// SetBudget changes the session's budgets and saves them with it; a run in
// progress checks its next request against them. Negative limits are
// invalid_params.
func (s *Session) SetBudget(c BudgetChange) (*Snapshot, error) {
	next := s.st.Header().Budget
	c.applyTo(&next)
	if err := next.Validate(); err != nil {
		return nil, errorf(CodeInvalidParams, "%v", err)
	}
	s.mu.Lock()
	closed := s.state.closed
	s.mu.Unlock()
	if closed {
		return nil, errorf(CodeSessionNotFound, "session %s is closed", s.id)
	}
	err := s.saveMeta(func(h *store.Header) { c.applyTo(&h.Budget) })
	if err != nil {
		return nil, err
	}
	s.publishState()
	return s.Snapshot(), nil
}
