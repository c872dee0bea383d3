package engine

import (
	"context"
	"encoding/json"
)

// Approval decisions, as the client answers them.
const (
	DecisionAllowedOnce    = "allowed-once"
	DecisionAllowedSession = "allowed-session"
	DecisionRejected       = "rejected"
)

// ApprovalRequest asks the front end whether a tool call may run.
type ApprovalRequest struct {
	SessionID  string          `json:"sessionId"`
	ApprovalID string          `json:"approvalId"`
	Tool       ApprovalTool    `json:"tool"`
	Options    []string        `json:"options"`
	Reason     string          `json:"reason,omitempty"`
	Input      json.RawMessage `json:"-"`
}

// ApprovalTool names the tool a request is about.
type ApprovalTool struct {
	Name   string          `json:"name"`
	Server string          `json:"server,omitempty"`
	Input  json.RawMessage `json:"input"`
}

// Approver is the front end's side of approvals. Ask blocks until the
// user decides or ctx is cancelled (the engine then withdraws the request).
type Approver interface {
	Ask(ctx context.Context, req ApprovalRequest) (decision string, err error)
}

// SetApprover installs the front end's approval handler.
func (e *Engine) SetApprover(a Approver) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.approver = a
}

func (e *Engine) getApprover() Approver {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.approver
}
