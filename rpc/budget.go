package rpc

import (
	"context"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// budgetLimit is one limit of session/set_budget as the engine takes it:
// absent keeps it (nil), null clears it, a number sets it
// (docs/protocol.md).
func budgetLimit[T any](l *native.Limit[T]) *engine.BudgetLimit[T] {
	switch {
	case !l.Present():
		return nil
	case l.Null():
		return &engine.BudgetLimit[T]{Clear: true}
	}
	return &engine.BudgetLimit[T]{Value: l.Value()}
}

func (s *Server) sessionSetBudget(_ context.Context, p *native.SessionSetBudgetParams) (*native.Snapshot, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	return snapshotReply(sess.SetBudget(engine.BudgetChange{
		SessionTokens: budgetLimit(&p.SessionTokens), SessionCost: budgetLimit(&p.SessionCost),
		PromptTokens: budgetLimit(&p.PromptTokens), PromptCost: budgetLimit(&p.PromptCost),
	}))
}
