package acp

import (
	"context"
	"errors"
	"fmt"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/sourcegraph/jsonrpc2"
)

// Permission option ids; each is also its kind.
const (
	allowOnce    = "allow_once"
	allowAlways  = "allow_always"
	rejectOnce   = "reject_once"
	rejectAlways = "reject_always"
)

var permissionOptions = []permissionOption{
	{OptionID: allowOnce, Name: "Allow", Kind: allowOnce},
	{OptionID: allowAlways, Name: "Always allow", Kind: allowAlways},
	{OptionID: rejectOnce, Name: "Reject", Kind: rejectOnce},
	{OptionID: rejectAlways, Name: "Always reject", Kind: rejectAlways},
}

var _ engine.Approver = (*Agent)(nil)

// Ask is the engine's approval request as session/request_permission,
// pointing at the card of the call that waits. "Always allow" and "always
// reject" are the engine's allowed-session and rejected-session: the
// engine remembers them for the live session and decides later calls of
// the tool without asking (until session/close, which resets them). An
// answer of "cancelled" means
// the client cancelled the turn: the agent cancels it as session/cancel
// does. When the run stops first (ctx), the request is withdrawn with
// $/cancel_request.
func (a *Agent) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	if a.inputEnded.Load() {
		return "", errInputClosed
	}
	ctx, stopListening := a.whileClientListens(ctx)
	defer stopListening()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return "", errors.New("the ACP connection is closed")
	}
	v := a.views[req.SessionID]
	if v == nil {
		a.mu.Unlock()
		return "", fmt.Errorf("no ACP client has session %s open", req.SessionID)
	}
	// The card of the call that waits: it stays pending until the user
	// answers (docs/acp.md, "Permission requests").
	callID := req.ToolCallID
	if callID == "" {
		callID = "approval-" + req.ApprovalID
	}
	cwd := v.cwd
	conn := a.conn
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.asks[req.ApprovalID] = cancel
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.asks, req.ApprovalID)
		a.mu.Unlock()
	}()
	if conn == nil {
		return "", errors.New("the ACP connection is not bound")
	}

	args := req.Tool.Input
	call := toolCallStart(callID, req.Tool.Name, args, cwd)
	call.SessionUpdate, call.Status = "", ""
	// The card shows what would change before the user decides.
	if req.Tool.Name == tools.NameWrite || req.Tool.Name == tools.NameEdit {
		call.Content = argsDiff(req.Tool.Name, args, cwd)
	}
	params := requestPermissionParams{SessionID: req.SessionID, ToolCall: call, Options: permissionOptions}
	id := jsonrpc2.ID{Str: "permission-" + req.ApprovalID, IsString: true}
	w, err := conn.DispatchCall(actx, "session/request_permission", params, jsonrpc2.PickID(id))
	if err != nil {
		return "", rpcerr.FromClient("session/request_permission", err)
	}
	var res requestPermissionResult
	err = w.Wait(actx, &res)
	if actx.Err() != nil {
		_ = conn.Notify(context.Background(), "$/cancel_request", map[string]any{"requestId": id.Str})
		if a.inputEnded.Load() {
			return "", errInputClosed
		}
		return "", actx.Err()
	}
	// An error answer is a rejection, in the client's words.
	var ce *rpcerr.ClientError
	if err = rpcerr.FromClient("session/request_permission", err); errors.As(err, &ce) {
		return "", &engine.RejectedError{Message: ce.Said}
	}
	if err != nil {
		return "", err
	}
	switch res.Outcome.Outcome {
	case "cancelled":
		// The client cancelled the turn (it sends session/cancel too,
		// which usually arrives first); stop it either way.
		_, _ = a.cancelSession(req.SessionID)
		return "", context.Canceled
	case "selected":
	default:
		return "", fmt.Errorf("session/request_permission: unknown outcome %q", res.Outcome.Outcome)
	}
	switch res.Outcome.OptionID {
	case allowOnce:
		a.toolRuns(req.SessionID, callID)
		return engine.DecisionAllowedOnce, nil
	case allowAlways:
		a.toolRuns(req.SessionID, callID)
		return engine.DecisionAllowedSession, nil
	case rejectOnce:
		return engine.DecisionRejected, nil
	case rejectAlways:
		return engine.DecisionRejectedSession, nil
	}
	return "", fmt.Errorf("session/request_permission: unknown option %q", res.Outcome.OptionID)
}

// toolRuns moves the card of a call the user allowed from pending to
// in_progress: the engine runs an allowed call as soon as Ask returns, and
// the call's later updates (progress, the end) follow this one. A rejected
// call goes from pending to failed with its end.
func (a *Agent) toolRuns(sessionID, callID string) {
	a.evMu.Lock()
	defer a.evMu.Unlock()
	a.mu.Lock()
	var t *toolView
	if v := a.views[sessionID]; v != nil && !a.closed {
		t = v.tools[callID]
	}
	send := t != nil && !t.started && !t.ended
	if send {
		t.started = true
	}
	a.mu.Unlock()
	if send {
		a.notify(sessionID, toolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: callID, Status: "in_progress"})
	}
}
