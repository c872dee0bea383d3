package engine

import (
	"context"
	"encoding/json"
)

// Approval decisions, as the client answers them. The two "-session"
// answers also stand for later calls of the same tool in the live
// session, which then run or are rejected without a request; both
// dialects use them (docs/protocol.md 6, docs/acp.md "Permission
// requests").
const (
	DecisionAllowedOnce     = "allowed-once"
	DecisionAllowedSession  = "allowed-session"
	DecisionRejected        = "rejected"
	DecisionRejectedSession = "rejected-session"
)

// ApprovalRequest asks the front end whether a tool call may run.
type ApprovalRequest struct {
	SessionID  string
	ApprovalID string
	// ToolCallID is the call's session-unique id, as its ToolEvents carry it.
	ToolCallID string
	Tool       ApprovalTool
	Options    []string
	Reason     string
}

// ApprovalTool names the tool a request is about.
type ApprovalTool struct {
	Name   string
	Server string
	Input  json.RawMessage
}

// Approver is the front end's side of approvals. Ask blocks until the
// user decides or ctx is cancelled (the engine then withdraws the request).
//
// An error counts as a rejection, except ctx's own error (context.Canceled),
// which means the request was withdrawn: the call is then "cancelled". So an
// Ask that fails for a reason of its own (the client closed its input)
// reports that reason rather than ctx.Err(), even when the run is being
// stopped too, and the call is rejected. A *RejectedError is a client that
// answered with an error instead of a decision.
type Approver interface {
	Ask(ctx context.Context, req ApprovalRequest) (decision string, err error)
}

// RejectedError is an Approver's report that the client answered the
// approval request with an error rather than a decision. The call is
// rejected; the model reads the rejection, then Message when it is set.
type RejectedError struct {
	Message string // the client's words, if any
}

func (e *RejectedError) Error() string {
	if e.Message == "" {
		return "the client rejected the approval request"
	}
	return "the client rejected the approval request: " + e.Message
}

// rejectedText is what the model reads for a rejected call.
const rejectedText = "The user rejected this tool call."

// standingDecision is the answer that holds for tool for the rest of the
// live session: DecisionAllowedSession, DecisionRejectedSession or "".
// Never stored: a reopened session asks again.
func (s *Session) standingDecision(tool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.standing[tool]
}

// ResetApprovals forgets the answers that stood for the rest of the session
// (allowed-session, rejected-session): later calls ask again. ACP's
// session/close calls it, since those answers last as long as the
// editor's session (docs/acp.md).
func (s *Session) ResetApprovals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.standing)
}

// SetApprover installs the approval handler of runs whose input names
// none (PromptInput.Approver, Session.ResumeWith): the one front end of a
// host such as loop run or loop chat. A server with several connections
// gives each input its connection's instead, so that each client answers
// the approvals of the prompts it sent.
func (e *Engine) SetApprover(a Approver) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.approver = a
}

// approverOr is a run's approver: its input's, else the engine's.
func (e *Engine) approverOr(a Approver) Approver {
	if a != nil {
		return a
	}
	return e.getApprover()
}

func (e *Engine) getApprover() Approver {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.approver
}
