package rpc

import (
	"bytes"
	"encoding/json"

	"github.com/loopdev/loop/engine"
)

// limitParam is one limit of session/set_budget: absent keeps it, null
// clears it, a number sets it (docs/protocol.md).
type limitParam[T any] struct {
	present, null bool
	value         T
}

func (l *limitParam[T]) UnmarshalJSON(b []byte) error {
	l.present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		l.null = true
		return nil
	}
	return json.Unmarshal(b, &l.value)
}

func (l *limitParam[T]) change() *engine.BudgetLimit[T] {
	switch {
	case !l.present:
		return nil
	case l.null:
		return &engine.BudgetLimit[T]{Clear: true}
	}
	return &engine.BudgetLimit[T]{Value: l.value}
}

func (s *Server) sessionSetBudget(raw *json.RawMessage) (any, error) {
	var p struct {
		sessionParams
		SessionTokens limitParam[int]     `json:"sessionTokens"`
		SessionCost   limitParam[float64] `json:"sessionCost"`
		PromptTokens  limitParam[int]     `json:"promptTokens"`
		PromptCost    limitParam[float64] `json:"promptCost"`
	}
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	return snapshotReply(sess.SetBudget(engine.BudgetChange{
		SessionTokens: p.SessionTokens.change(), SessionCost: p.SessionCost.change(),
		PromptTokens: p.PromptTokens.change(), PromptCost: p.PromptCost.change(),
	}))
}
