package engine

import (
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// checkBudget refuses a request that could exceed a limit of the
// session's budgets (turn.Spend.Over), with budget_exceeded. inRun says
// whether the request belongs to a run, which the prompt limits cover.
func (s *Session) checkBudget(m *Model, need turn.Need, inRun bool) error {
	b := s.st.Header().Budget
	if b.IsZero() {
		return nil
	}
	spend := turn.Spend{Budget: b, Model: m.Provider + "/" + m.ID, Prices: m.prices(), InRun: inRun}
	s.mu.Lock()
	spend.Total = s.usage.UsageSum
	if r := s.state.run; inRun && r != nil {
		spend.Run = r.usage
	}
	s.mu.Unlock()
	if why := spend.Over(need); why != "" {
		return errorf(CodeBudgetExceeded, "the request was not sent: %s", why)
	}
	return nil
}

// simpleNeed is the need of a request without tools whose messages are all
// its own (titles, compaction summaries).
func (s *Session) simpleNeed(req *provider.Request) turn.Need {
	return turn.SimpleNeed(req, &s.e.tokens)
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
	// Not a command (it works during a run): an idle session that let go
	// of its lock takes it for this write (letgo.go).
	defer s.relockForWrite()()
	err := s.saveMeta(func(h *store.Header) { c.applyTo(&h.Budget) })
	if err != nil {
		return nil, err
	}
	s.publishState()
	return s.Snapshot(), nil
}
