package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/loopdev/loop/internal/environ"
	"github.com/loopdev/loop/internal/sandbox"
)

// drainGrace is how long output is still read after the shell exits, for
// background jobs that keep the pipe open; their later output is dropped.
const drainGrace = 500 * time.Millisecond

var bashFields = []field{
	{name: "command", typ: "string", required: true, desc: "Shell command to run with bash -c in the working directory."},
	{name: "timeout", typ: "number", desc: "Timeout in seconds (default 120, at most 600)."},
}

type bashTool struct{}

func (bashTool) Name() string { return NameBash }

func (bashTool) Description() string {
	return fmt.Sprintf("Run a shell command with `bash -c` (sh when bash is missing) in the working directory; stdin is empty. "+
		"stdout and stderr come back combined, in order, followed by the exit code; a non-zero exit is an error result. "+
		"Output beyond %d KiB is cut in the middle, keeping the start and the end. "+
		"The command is killed, with everything it started, when it times out (default %d s, at most %d s) or the run is stopped. "+
		"Background jobs (cmd &) may outlive the command, but their output stops being collected once the shell exits; "+
		"redirect it to a file if you need it. Where commands run in an OS sandbox, and what it allows, "+
		"is in the Permissions section of the system prompt. "+
		"Prefer read, ls, grep and find for looking at files.",
		DefaultBashOutputCap>>10, int(DefaultBashTimeout.Seconds()), int(DefaultBashMaxTimeout.Seconds()))
}

func (bashTool) Schema() json.RawMessage { return schemaOf(bashFields) }

func (bashTool) access() access { return accessExec }

func (bashTool) parse(raw json.RawMessage) (args, error) { return parseArgs(NameBash, bashFields, raw) }

func (bashTool) paths(args) []string { return nil }

func (t bashTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	command, _ := a.str("command")
	if strings.TrimSpace(command) == "" {
		return errorResult("invalid arguments for bash: command is empty")
	}
	timeout := env.bashTimeout()
	if secs, ok := a.number("timeout"); ok {
		maxSecs := env.bashMaxTimeout().Seconds()
		if secs <= 0 || secs > maxSecs || math.IsNaN(secs) {
			return errorResult("invalid arguments for bash: timeout must be more than 0 and at most %g seconds, got %g", maxSecs, secs)
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	root, err := workspaceRoot(env.Cwd)
	if err != nil {
		return errorResult("bash: %v", err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return errorResult("bash: the working directory %s is not an accessible directory", root)
	}
	if err := ctx.Err(); err != nil {
		return errorResult("bash: not started: %v", err)
	}
	if env.Terminal != nil {
		switch {
		case env.Sandbox == nil:
			return runTerminal(ctx, env, root, command, timeout, progress)
		case env.SandboxHelper != "":
			// The editor's terminal runs commands with the editor's
			// rights: it runs the loop binary, which sandboxes the
			// command before it starts.
			line, err := sandbox.HelperLine(env.SandboxHelper, *env.Sandbox, []string{Shell(), "-c", command})
			if err != nil {
				return errorResult("bash: %v", err)
			}
			r := runTerminal(ctx, env, root, line, timeout, progress)
			return sandboxed(r, env.Sandbox, r.Details["timedOut"] == true || r.Details["aborted"] == true)
		}
		// No helper to sandbox it there: it runs here.
	}
	return runShell(ctx, env, root, command, timeout, progress)
}

// shellPath prefers bash and falls back to sh.
func shellPath() string {
	if fi, err := os.Stat("/bin/bash"); err == nil && !fi.IsDir() {
		return "/bin/bash"
	}
	return "/bin/sh"
}

func runShell(ctx context.Context, env Env, root, command string, timeout time.Duration, progress func(string)) Result {
	cmd := exec.Command(shellPath(), "-c", command)
	cmd.Dir = root
	cmd.Env = append(environ.Without(os.Environ(), env.HideEnv), "PAGER=cat", "GIT_PAGER=cat")
	cmd.Env = append(cmd.Env, env.BashEnv...)
	startGroup(cmd)
	pr, pw, err := os.Pipe()
	if err != nil {
		return errorResult("bash: create output pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw // one pipe keeps stdout and stderr in order
	if err := start(cmd, env.Sandbox); err != nil {
		pw.Close()
		pr.Close()
		return errorResult("bash: start %s: %v", cmd.Path, err)
	}
	pw.Close() // the children hold the write end now
	defer pr.Close()

	out := newCapBuffer(env.bashOutputCap())
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		streamOutput(pr, out, progress, env.bashProgressCap())
	}()
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	stopped := "" // "timeout" or "aborted"
	select {
	case waitErr = <-waitDone:
	case <-timer.C:
		stopped = "timeout"
		waitErr = killGroup(cmd, env.killGrace(), waitDone)
	case <-ctx.Done():
		stopped = "aborted"
		waitErr = killGroup(cmd, env.killGrace(), waitDone)
	}
	// The shell is gone; wait for the pipe to drain, but not for background
	// jobs that keep it open.
	if err := pr.SetReadDeadline(time.Now().Add(drainGrace)); err != nil {
		pr.Close()
	}
	<-readerDone

	code, signal := exitStatus(cmd, waitErr)
	r := bashResult(out, code, signal, stopped, timeout, "killed with everything it started", nil)
	if env.Sandbox == nil {
		return r
	}
	return sandboxed(r, env.Sandbox, stopped != "")
}

// sandboxed marks the result of a command that ran in the sandbox p.
// Loop cannot see what the kernel refused: a failure that was not a
// timeout or an abort gets the note saying what the sandbox allows, and a
// permission error in the output marks the call for the ask preset's
// offer to run it unsandboxed.
func sandboxed(r Result, p *sandbox.Policy, stopped bool) Result {
	if r.Details == nil {
		return r // it did not start: the error says why
	}
	r.Details["sandbox"] = p.Name
	if r.IsError && !stopped {
		r.Details["sandboxDenied"] = looksDenied(r.Text())
		r.Content[0].Text += sandboxNote(p)
	}
	return r
}

// start starts cmd, in the OS sandbox p when p is set.
func start(cmd *exec.Cmd, p *sandbox.Policy) error {
	if p == nil {
		return cmd.Start()
	}
	if err := sandbox.Start(cmd, *p); err != nil {
		return fmt.Errorf("in the %s sandbox: %w", p.Name, err)
	}
	return nil
}

// bashResult is the result of a finished command, run here or in a client
// terminal: the output kept by out, then a line saying how it ended.
// killed says what stopping it did; extra joins Details.
func bashResult(out *capBuffer, code int, signal, stopped string, timeout time.Duration, killed string, extra map[string]any) Result {
	details := map[string]any{
		"exitCode":    code,
		"truncated":   out.truncated(),
		"outputBytes": out.total,
	}
	for k, v := range extra {
		details[k] = v
	}
	if signal != "" {
		details["signal"] = signal
	}
	text := out.String()
	if out.total == 0 {
		text = "(no output)"
	}
	text = strings.TrimRight(text, "\n") + "\n\n"
	switch stopped {
	case "timeout":
		details["timedOut"] = true
		text += fmt.Sprintf("[command timed out after %s and was %s]", formatSeconds(timeout), killed)
	case "aborted":
		details["aborted"] = true
		text += fmt.Sprintf("[command aborted: the run was stopped, and the command was %s]", killed)
	default:
		if signal != "" {
			text += fmt.Sprintf("[command killed by signal %s]", signal)
		} else {
			text += fmt.Sprintf("[exit code %d]", code)
		}
	}
	return Result{
		Content: textResult(text, nil).Content,
		IsError: stopped != "" || code != 0,
		Details: details,
	}
}

// streamOutput copies the pipe into out, and into progress up to a cap.
func streamOutput(pr *os.File, out *capBuffer, progress func(string), progressCap int) {
	buf := make([]byte, 32<<10)
	var split utf8Splitter
	streamed := 0
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			out.Write(buf[:n])
			if progress != nil && streamed < progressCap {
				if s := split.next(buf[:n]); s != "" {
					progress(s)
				}
				streamed += n
				if streamed >= progressCap {
					progress(fmt.Sprintf("\n[live output stops here after %d KiB; the result keeps the start and the end]\n", progressCap>>10))
				}
			}
		}
		if err != nil {
			if progress != nil && streamed < progressCap {
				if s := split.flush(); s != "" {
					progress(s)
				}
			}
			return
		}
	}
}

// exitStatus returns the exit code (-1 when a signal ended the shell) and
// the signal's name.
func exitStatus(cmd *exec.Cmd, waitErr error) (int, string) {
	if cmd.ProcessState == nil {
		return -1, ""
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return -1, ""
	}
	return cmd.ProcessState.ExitCode(), signalName(cmd.ProcessState)
}

func formatSeconds(d time.Duration) string {
	s := d.Seconds()
	if s == math.Trunc(s) {
		return fmt.Sprintf("%d s", int(s))
	}
	return fmt.Sprintf("%g s", s)
}
