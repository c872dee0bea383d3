package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
)

// pendingApproval is an approval request waiting for the client.
type pendingApproval struct {
	id     string
	cancel context.CancelFunc
}

// runTool runs one tool call under the session's permission preset and
// returns its result message. Denials and failures are ordinary tool
// errors the model reads. id is the call's session-unique id, the one
// events and approval requests carry; the result message keeps the
// provider's (call.ID), which the model gets back. journalStart is
// called right before the tool executes (after its approval), to record its
// start durably (engine/journal.go); if it fails, the tool does not run.
func (s *Session) runTool(ctx context.Context, runID string, ap Approver, id string, call convo.Block, journalStart func() error) convo.Message {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	// The permission rules decide before the call starts, so that its start
	// says whether it waits for the user (docs/acp.md: a call waiting for
	// approval stays pending).
	g := s.gateTool(call, args)
	status := "running"
	if g.ask != "" {
		status = "waiting_approval"
	}
	s.setToolStatus(id, call.Name, status)
	s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
		SessionID: s.id, RunID: runID, ToolCallID: id, Name: call.Name, Event: "start", Input: slices.Clone(args),
		AwaitsApproval: g.ask != "",
	}})
	started := time.Now()
	res := s.execTool(ctx, runID, ap, id, call, args, g, journalStart)
	s.setToolStatus(id, call.Name, "done")
	if res.Content == nil {
		res.Content = []convo.Block{}
	}
	s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
		SessionID: s.id, RunID: runID, ToolCallID: id, Name: call.Name, Event: "end",
		IsError: res.IsError, Result: cloneBlocks(res.Content), Details: res.Details,
	}})
	msg := convo.Message{
		Role: convo.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name, IsError: res.IsError,
		Content: res.Content, Timestamp: s.e.now(),
	}
	s.traceTool(ctx, runID, call, args, msg, started)
	return msg
}

func toolError(text string) tools.Result {
	return tools.Result{IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: text}}}
}

// toolGate is what is decided about a call before it starts: a result
// that stands without running it (a denial, a replayed result), or else
// the tool to run, and whether the user must approve it first.
type toolGate struct {
	result *tools.Result
	ask    string // the approval request's reason; "" when none is asked
	preset tools.Preset
	mcp    *mcp.Manager // an MCP tool's server; nil for a built-in tool
	tool   tools.Tool
}

func (s *Session) gateTool(call convo.Block, args json.RawMessage) toolGate {
	stands := func(r tools.Result) toolGate { return toolGate{result: &r} }
	// The model may name a tool it was not offered: the session's
	// AgentOptions decide before anything else, so it never runs.
	s.mu.Lock()
	offer := s.offer
	s.mu.Unlock()
	if !offer.allows(call.Name) {
		return stands(toolError("The tool " + call.Name + " is not available in this session."))
	}
	if r, ok := s.replayedTool(call, args); ok {
		return stands(tools.Result{Content: r.Content, IsError: r.IsError})
	}
	if !json.Valid(args) {
		return stands(toolError("The arguments are not valid JSON: " + string(args)))
	}
	g := toolGate{preset: tools.Preset(s.st.Permission())}
	if g.preset == "" {
		g.preset = tools.PresetReadOnly
	}
	decision, reason := tools.Allow, ""
	if mcp.IsMCPTool(call.Name) {
		if g.mcp = s.mcpManagerFor(call.Name); g.mcp == nil {
			return stands(toolError("No MCP server is configured for " + call.Name + "."))
		}
		// Every MCP call may change the world: it asks under every
		// preset but full-access.
		if g.preset != tools.PresetFullAccess {
			decision, reason = tools.Ask, "MCP tools ask before they run under the "+string(g.preset)+" preset"
		}
	} else {
		tool, ok := tools.Lookup(call.Name)
		if !ok {
			return stands(toolError("There is no tool named " + call.Name + "."))
		}
		g.tool = tool
		decision, reason = tools.Decide(g.preset, s.e.Sandbox().Available, call.Name, args, s.cwd)
	}
	switch decision {
	case tools.Deny:
		return stands(toolError("Permission denied: " + reason))
	case tools.Ask:
		// An answer that stands for the rest of the session
		// (allowed-session, rejected-session) decides without a request.
		switch s.standingDecision(call.Name) {
		case DecisionAllowedSession:
		case DecisionRejectedSession:
			return stands(toolError(rejectedText))
		default:
			g.ask = reason
		}
	}
	return g
}

func (s *Session) execTool(ctx context.Context, runID string, ap Approver, id string, call convo.Block, args json.RawMessage, g toolGate, journalStart func() error) (res tools.Result) {
	if g.result != nil {
		return *g.result
	}
	if g.ask != "" {
		if ok, why := s.askApproval(ctx, ap, id, call, call.Name, args, g.ask); !ok {
			return toolError(why)
		}
	}
	if g.mcp != nil {
		if err := journalStart(); err != nil {
			return toolError("The tool call did not run: Loop could not record its start (" + err.Error() + ").")
		}
		res, err := g.mcp.Call(ctx, call.Name, args)
		if err != nil {
			return toolError("The MCP call failed: " + err.Error())
		}
		return tools.Result{Content: res.Content, IsError: res.IsError}
	}
	hide := s.e.catalog().keyVars
	s.mu.Lock()
	env := tools.Env{Cwd: s.cwd, Preset: g.preset, FS: s.clientFS, Terminal: s.clientTerm, HideEnv: hide, ToolOutput: s.toolOutput}
	var rf *runFiles
	if r := s.state.run; r != nil && r.id == runID {
		rf = r.files
	}
	s.mu.Unlock()
	if call.Name == tools.NameBash {
		env.Sandbox = s.e.sandboxPolicy(g.preset, env.Cwd)
		env.SandboxHelper = s.e.opts.SandboxHelper
	}
	// What the call changes can be put back: its file checkpoint is
	// durable before it runs (engine/filecheckpoint.go), or it does not
	// run. The checkpoint's fsync goes beside the start record's, so that
	// the file system commits both at once.
	note, ckErr, jErr := s.beforeTool(ctx, runID, rf, call.Name, args, env, journalStart)
	if jErr != nil {
		return toolError("The tool call did not run: Loop could not record its start (" + jErr.Error() + ").")
	}
	if ckErr != nil {
		return toolError("The tool call did not run: Loop could not record a file checkpoint first (" + ckErr.Error() + ").")
	}
	defer func() {
		if note != "" {
			if res.Details == nil {
				res.Details = map[string]any{}
			}
			res.Details["checkpoint"] = note
		}
	}()
	progress := func(chunk string) {
		s.e.emit(Event{Kind: EventTool, SessionID: s.id, Payload: &ToolEvent{
			SessionID: s.id, RunID: runID, ToolCallID: id, Name: call.Name, Event: "progress", Progress: chunk,
		}})
	}
	res = g.tool.Run(ctx, env, args, progress)
	if g.preset == tools.PresetAsk && res.Details["sandboxDenied"] == true && ctx.Err() == nil {
		return s.rerunUnsandboxed(ctx, ap, id, call, args, env, res, progress)
	}
	return res
}

// unsandboxedKey is what an answer for the rest of the session to "run
// it again without the sandbox" stands under, apart from the answer for
// bash itself.
const unsandboxedKey = "bash (unsandboxed)"

// rerunUnsandboxed keeps ask's promise that a command needing more than
// the sandbox allows is asked for. Loop cannot see what the kernel
// refused, so a command that failed in the sandbox with a permission error
// in its output (res) is offered to the user to run again without the
// sandbox, with the user's full rights (docs/cli.md, "Permission presets").
func (s *Session) rerunUnsandboxed(ctx context.Context, ap Approver, id string, call convo.Block, args json.RawMessage, env tools.Env, res tools.Result, progress func(string)) tools.Result {
	// Asked every time: an answer "for the session" would let any later
	// command that prints a permission error (which the model can make
	// any command do) leave the sandbox unasked. Only a rejection stands.
	ok, why := false, rejectedText
	if s.standingDecision(unsandboxedKey) != DecisionRejectedSession {
		reason := "bash failed in the workspace-write sandbox with a permission error. It already ran there once: " +
			"running it again repeats what it did, this time without the sandbox, with the user's full rights. Run it again?"
		ok, why = s.askApproval(ctx, ap, id, call, unsandboxedKey, args, reason)
	}
	if !ok {
		res.Content = append(res.Content, convo.Block{Type: convo.BlockText, Text: "\n[not run again without the sandbox: " + why + "]"})
		return res
	}
	env.Sandbox = nil
	s.mu.Lock()
	env.Terminal = s.clientTerm
	s.mu.Unlock()
	bash, _ := tools.Lookup(tools.NameBash)
	res = bash.Run(ctx, env, args, progress)
	if res.Details == nil {
		res.Details = map[string]any{}
	}
	res.Details["sandbox"] = "none: run again without it, as the user approved"
	return res
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

// askApproval sends an approval request to the run's approver (the
// connection that started the run, else the engine's) and waits for the
// decision or for the run's cancellation. Nothing about approvals is
// stored.
//
// key is what an answer for the rest of the session stands under: the
// tool's name, or unsandboxedKey.
func (s *Session) askApproval(ctx context.Context, ap Approver, callID string, call convo.Block, key string, args json.RawMessage, reason string) (bool, string) {
	ap = s.e.approverOr(ap)
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
	s.setToolStatus(callID, call.Name, "waiting_approval")
	s.publishState()
	s.publishListChange("approval")

	server, _ := mcp.ServerOf(call.Name)
	decision, err := ap.Ask(actx, ApprovalRequest{
		SessionID: s.id, ApprovalID: id, ToolCallID: callID, Reason: reason,
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
		s.standing[key] = outcome
	}
	s.lastApproval = &ApprovalOutcome{ApprovalID: id, Tool: call.Name, Server: server, Decision: outcome, At: s.e.now()}
	s.mu.Unlock()
	// A call the user did not allow will not run.
	if ok {
		s.setToolStatus(callID, call.Name, "running")
	} else {
		s.setToolStatus(callID, call.Name, "done")
	}
	s.publishState()
	s.publishListChange("approval")
	return ok, why
}
