package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/store"
)

// pendingApproval is an approval request waiting for the client.
type pendingApproval struct {
	id     string
	cancel context.CancelFunc
}

// runTool runs one tool call under the session's permission preset and
// returns its result message. Denials and failures are ordinary tool
// errors the model reads.
func (s *Session) runTool(ctx context.Context, runID string, call store.Block) store.Message {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	s.setToolStatus(call.ID, call.Name, "running")
	s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
		SessionID: s.id, RunID: runID, ToolCallID: call.ID, Name: call.Name, Event: "start", Input: slices.Clone(args),
	}})
	started := time.Now()
	res := s.execTool(ctx, runID, call, args)
	s.setToolStatus(call.ID, call.Name, "done")
	if res.Content == nil {
		res.Content = []store.Block{}
	}
	s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
		SessionID: s.id, RunID: runID, ToolCallID: call.ID, Name: call.Name, Event: "end",
		IsError: res.IsError, Result: cloneBlocks(res.Content), Details: res.Details,
	}})
	msg := store.Message{
		Role: store.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name, IsError: res.IsError,
		Content: res.Content, Timestamp: s.e.now(),
	}
	s.traceTool(ctx, runID, call, args, msg, started)
	return msg
}

func toolError(text string) tools.Result {
	return tools.Result{IsError: true, Content: []store.Block{{Type: store.BlockText, Text: text}}}
}

func (s *Session) execTool(ctx context.Context, runID string, call store.Block, args json.RawMessage) tools.Result {
	if r, ok := s.replayedTool(call, args); ok {
		return tools.Result{Content: r.Content, IsError: r.IsError}
	}
	if !json.Valid(args) {
		return toolError("The arguments are not valid JSON: " + string(args))
	}
	preset := tools.Preset(s.st.Permission())
	if preset == "" {
		preset = tools.PresetReadOnly
	}
	if mcp.IsMCPTool(call.Name) {
		return s.execMCP(ctx, call, args, preset)
	}
	tool, ok := tools.Lookup(call.Name)
	if !ok {
		return toolError("There is no tool named " + call.Name + ".")
	}
	decision, reason := tools.Decide(preset, call.Name, args, s.cwd)
	if decision == tools.Ask {
		if ok, why := s.approve(ctx, call, args, reason); !ok {
			return toolError(why)
		}
		decision = tools.Allow
	}
	if decision == tools.Deny {
		return toolError("Permission denied: " + reason)
	}
	hide := s.e.catalog().keyVars
	s.mu.Lock()
	env := tools.Env{Cwd: s.cwd, Preset: preset, FS: s.clientFS, Terminal: s.clientTerm, HideEnv: hide}
	s.mu.Unlock()
	return tool.Run(ctx, env, args, func(chunk string) {
		s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
			SessionID: s.id, RunID: runID, ToolCallID: call.ID, Name: call.Name, Event: "progress", Progress: chunk,
		}})
	})
}

func (s *Session) setToolStatus(id, name, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.toolStatus {
		if s.toolStatus[i].ToolCallID == id {
			s.toolStatus[i].Status = status
			return
		}
	}
	s.toolStatus = append(s.toolStatus, ToolStatus{ToolCallID: id, Name: name, Status: status})
}

// approve decides a call that needs the user's consent: an answer that
// stands for the rest of the session (allowed-session, rejected-session)
// decides it without a request; otherwise the client is asked.
func (s *Session) approve(ctx context.Context, call store.Block, args json.RawMessage, reason string) (bool, string) {
	switch s.standingDecision(call.Name) {
	case DecisionAllowedSession:
		return true, ""
	case DecisionRejectedSession:
		return false, rejectedText
	}
	return s.askApproval(ctx, call, args, reason)
}

// askApproval sends an approval request and waits for the decision or for
// the run's cancellation. Nothing about approvals is stored.
func (s *Session) askApproval(ctx context.Context, call store.Block, args json.RawMessage, reason string) (bool, string) {
	ap := s.e.getApprover()
	if ap == nil {
		return false, "This call needs the user's approval, and no client can answer approval requests."
	}
	id := newID()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.approvals[id] = &pendingApproval{id: id, cancel: cancel}
	s.mu.Unlock()
	defer func() {
		// Also when the approver panics: a forgotten approval would
		// refuse every command with approval_pending.
		s.mu.Lock()
		delete(s.approvals, id)
		s.mu.Unlock()
	}()
	s.setToolStatus(call.ID, call.Name, "waiting_approval")
	s.publishState()
	s.publishListChange("approval")

	server, _ := mcp.ServerOf(call.Name)
	decision, err := ap.Ask(actx, ApprovalRequest{
		SessionID: s.id, ApprovalID: id, Reason: reason,
		Tool:    ApprovalTool{Name: call.Name, Server: server, Input: slices.Clone(args)},
		Options: []string{DecisionAllowedOnce, DecisionAllowedSession, DecisionRejected, DecisionRejectedSession},
	})
	outcome := decision
	ok, why := false, ""
	var rejected *RejectedError
	switch {
	case errors.As(err, &rejected):
		outcome, why = DecisionRejected, rejectedText
		if rejected.Message != "" {
			why += " The client said: " + rejected.Message
		}
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		// A failure of its own (stdin closed) decides, even when the run
		// is being stopped too: docs/protocol.md 6.
		outcome, why = DecisionRejected, "The approval request failed: "+err.Error()
	case actx.Err() != nil || err != nil:
		outcome, why = "cancelled", "The approval request was cancelled because the run stopped."
	case decision == DecisionAllowedOnce:
		ok = true
	case decision == DecisionAllowedSession:
		ok = true
	case decision == DecisionRejected, decision == DecisionRejectedSession:
		why = rejectedText
	default:
		outcome, why = DecisionRejected, "The client answered the approval with an unknown decision "+decision+"; the call was rejected."
	}
	s.mu.Lock()
	delete(s.approvals, id)
	if outcome == DecisionAllowedSession || outcome == DecisionRejectedSession {
		s.standing[call.Name] = outcome
	}
	s.lastApproval = &ApprovalOutcome{ApprovalID: id, Tool: call.Name, Server: server, Decision: outcome, At: s.e.now()}
	s.mu.Unlock()
	s.setToolStatus(call.ID, call.Name, "running")
	s.publishState()
	s.publishListChange("approval")
	return ok, why
}
