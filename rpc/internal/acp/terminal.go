package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
)

// editorTerminal runs bash in a terminal of the client (terminal/*): the
// command shows in the editor, embedded in the call's card, while it runs.
// How the command line is put into terminal/create depends on the client
// (commandFor).
type editorTerminal struct {
	a         *Agent
	sessionID string
}

var _ tools.ClientTerminal = (*editorTerminal)(nil)

type envVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type createTerminalParams struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args,omitempty"`
	Env             []envVariable `json:"env,omitempty"`
	Cwd             string        `json:"cwd,omitempty"`
	OutputByteLimit *int          `json:"outputByteLimit,omitempty"`
}

type terminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type exitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

type terminalOutput struct {
	Output     string      `json:"output"`
	Truncated  bool        `json:"truncated"`
	ExitStatus *exitStatus `json:"exitStatus"`
}

// Run creates the terminal, shows it on the running call's card, waits for
// the command to exit and reads its output. When ctx ends first (the run
// stopped, or bash's timeout), the command is killed in the terminal and
// what it printed is returned with ctx's error. The terminal is always
// released; kill and release wait at most cleanupWait for the client.
func (t *editorTerminal) Run(ctx context.Context, req tools.TerminalRequest, _ func(string)) (tools.TerminalResult, error) {
	if !t.a.serving(t.sessionID) {
		return tools.TerminalResult{}, tools.ErrNotServed
	}
	params := createTerminalParams{SessionID: t.sessionID, Cwd: req.Cwd}
	params.Command, params.Args = t.a.commandFor(req.Command)
	for _, kv := range req.Env {
		name, value, _ := strings.Cut(kv, "=")
		params.Env = append(params.Env, envVariable{Name: name, Value: value})
	}
	if req.OutputByteLimit > 0 {
		limit := req.OutputByteLimit
		params.OutputByteLimit = &limit
	}
	id, err := t.create(ctx, params)
	if err != nil {
		return tools.TerminalResult{}, err
	}
	ids := terminalParams{SessionID: t.sessionID, TerminalID: id}
	// The calls after the wait must run after a cancel too: they do not
	// stop with ctx, but have their own deadline, started when needed.
	cleanupCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupWait)
	}
	defer func() {
		rctx, cancel := cleanupCtx()
		defer cancel()
		if err := t.a.callClient(rctx, "terminal/release", ids, nil); err != nil {
			t.a.log.Warn("acp terminal not released", "terminal", id, "err", err)
		}
	}()
	// The card shows the terminal before it is released, as ACP asks.
	t.a.embedTerminal(t.sessionID, id)

	var exit exitStatus
	werr := t.a.callClient(ctx, "terminal/wait_for_exit", ids, &exit)
	stopped := ctx.Err()
	cleanup, cancel := cleanupCtx()
	defer cancel()
	if stopped != nil {
		if err := t.a.callClient(cleanup, "terminal/kill", ids, nil); err != nil {
			t.a.log.Warn("acp terminal not killed", "terminal", id, "err", err)
		}
		// How the killed command ended, when the client says in time.
		exit = exitStatus{}
		_ = t.a.callClient(cleanup, "terminal/wait_for_exit", ids, &exit)
	} else if werr != nil {
		_ = t.a.callClient(cleanup, "terminal/kill", ids, nil)
		return tools.TerminalResult{}, werr
	}
	var out terminalOutput
	oerr := t.a.callClient(cleanup, "terminal/output", ids, &out)
	res := tools.TerminalResult{Output: out.Output, Truncated: out.Truncated}
	if exit.ExitCode == nil && exit.Signal == nil && out.ExitStatus != nil {
		exit = *out.ExitStatus
	}
	res.ExitCode = exit.ExitCode
	if exit.Signal != nil {
		res.Signal = *exit.Signal
	}
	if stopped != nil {
		return res, stopped
	}
	if oerr != nil {
		return res, fmt.Errorf("read the terminal's output: %w", oerr)
	}
	return res, nil
}

// commandFor gives terminal/create's command and args for a shell command
// line. ACP's schema makes command a program and args its arguments, and
// clients that follow it (acpx, the TypeScript SDK's) spawn them without a
// shell, so the line goes to the shell bash uses locally: tools.Shell(),
// "-c", line. Zed instead runs `command args...` through the user's shell,
// joining them without quoting, so `-c` and the line would be split there;
// Zed (clientInfo.name "zed") gets the whole line as command and no args,
// which its shell runs as written. docs/acp.md describes both.
func (a *Agent) commandFor(line string) (string, []string) {
	a.mu.Lock()
	info := a.clientInfo
	a.mu.Unlock()
	if info != nil && strings.EqualFold(strings.TrimSpace(info.Name), "zed") {
		return line, nil
	}
	return tools.Shell(), []string{"-c", line}
}

// create makes the terminal. If ctx ends while the client creates it, the
// agent still waits (briefly) for its id so it can kill and release it.
func (t *editorTerminal) create(ctx context.Context, params createTerminalParams) (string, error) {
	w, _, err := t.a.dispatchClient(ctx, "terminal/create", params)
	if err != nil {
		return "", err
	}
	var res struct {
		TerminalID string `json:"terminalId"`
	}
	err = w.Wait(ctx, &res)
	if ctx.Err() != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupWait)
		defer cancel()
		cleanup, stop := t.a.whileClientListens(cleanup)
		defer stop()
		if w.Wait(cleanup, &res) == nil && res.TerminalID != "" {
			ids := terminalParams{SessionID: t.sessionID, TerminalID: res.TerminalID}
			_ = t.a.callClient(cleanup, "terminal/kill", ids, nil)
			_ = t.a.callClient(cleanup, "terminal/release", ids, nil)
		}
		return "", ctx.Err()
	}
	if err != nil {
		return "", rpcerr.FromClient("terminal/create", err)
	}
	if res.TerminalID == "" {
		return "", errors.New("terminal/create: the client answered no terminalId")
	}
	return res.TerminalID, nil
}

// embedTerminal puts the terminal on the card of the call that runs it
// (the session's running call: a session runs one tool at a time), so the
// client shows its output live. Later progress and the closing update keep
// the terminal as the card's content (updates.go).
func (a *Agent) embedTerminal(sessionID, terminalID string) {
	a.evMu.Lock()
	defer a.evMu.Unlock()
	a.mu.Lock()
	v := a.views[sessionID]
	var callID string
	if v != nil && v.running != "" {
		if tv := v.tools[v.running]; tv != nil && tv.name == tools.NameBash {
			tv.terminalID = terminalID
			callID = v.running
		}
	}
	a.mu.Unlock()
	if callID == "" {
		return
	}
	a.notify(sessionID, toolCallUpdate{
		SessionUpdate: "tool_call_update",
		ToolCallID:    callID,
		Content:       terminalContent(terminalID),
	})
}

func terminalContent(terminalID string) []toolCallContent {
	return []toolCallContent{{Type: "terminal", TerminalID: terminalID}}
}
