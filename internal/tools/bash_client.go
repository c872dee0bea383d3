package tools

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runTerminal runs a bash command in the front end's terminal (ACP's
// terminal capability): the user watches it run in the editor, and the
// model gets the same result shape as from runShell. Stopping is the
// client's job: when the run stops or the timeout passes, ctx is cancelled
// and the ClientTerminal kills the command, then returns what it printed.
func runTerminal(ctx context.Context, env Env, root, command string, timeout time.Duration, progress func(string)) Result {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit := env.bashOutputCap()
	req := TerminalRequest{
		Command:         command,
		Cwd:             root,
		Env:             append([]string{"PAGER=cat", "GIT_PAGER=cat"}, env.BashEnv...),
		OutputByteLimit: limit,
	}
	res, err := env.Terminal.Run(tctx, req, progress)
	if errors.Is(err, ErrNotServed) && ctx.Err() == nil {
		// The front end no longer serves terminals (it went away).
		return runShell(ctx, env, root, command, timeout, progress)
	}
	stopped := ""
	switch {
	case ctx.Err() != nil:
		stopped = "aborted"
	case tctx.Err() != nil:
		stopped = "timeout"
	case err != nil:
		return errorResult("bash: the editor's terminal failed: %v", err)
	}
	// The client keeps the last OutputByteLimit bytes; a client that keeps
	// more is cut here like a local command's output.
	out := newCapBuffer(limit)
	if res.Truncated {
		fmt.Fprintf(out, "[the start of the output was dropped: the editor's terminal keeps the last %d KiB]\n", limit>>10)
	}
	out.Write([]byte(res.Output))
	code := -1
	if res.ExitCode != nil {
		code = *res.ExitCode
	}
	r := bashResult(out, code, res.Signal, stopped, timeout, "killed in the editor's terminal", map[string]any{"terminal": true})
	if res.Truncated {
		r.Details["truncated"] = true
	}
	return r
}
