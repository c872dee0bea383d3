package acp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	sdk "github.com/coder/acp-go-sdk"
)

// editor is the test client's side of fs/* and terminal/*, as an editor
// does it: open buffers shadow the disk, writes land in a buffer (and are
// saved to disk only when save is set, as an editor with autosave), and
// terminals run real commands: command and args as a program and its
// arguments, without a shell, as ACP's schema says, or, when zed is set,
// joined without quoting and run by a shell, as Zed does. Every call is
// logged.
type editor struct {
	edMu    sync.Mutex
	buffers map[string]string
	save    bool
	zed     bool
	calls   []string // "fs/read_text_file <path>", "terminal/kill <id>", ...
	terms   map[string]*terminal
	nextID  int
	// createErr, when set, is the answer to every terminal/create.
	createErr error
}

// terminal is one terminal/create: a bash process group with its output.
type terminal struct {
	cmd       *exec.Cmd
	mu        sync.Mutex
	out       []byte
	limit     int
	truncated bool
	done      chan struct{}
	exit      sdk.TerminalExitStatus
	released  bool
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, p...)
	if t.limit > 0 && len(t.out) > t.limit {
		t.out = append([]byte(nil), t.out[len(t.out)-t.limit:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (e *editor) log(format string, a ...any) {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	e.calls = append(e.calls, fmt.Sprintf(format, a...))
}

// callLog returns the calls whose text starts with prefix.
func (e *editor) callLog(prefix string) []string {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	var out []string
	for _, c := range e.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func (e *editor) setBuffer(path, content string) {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	if e.buffers == nil {
		e.buffers = map[string]string{}
	}
	e.buffers[path] = content
}

func (e *editor) buffer(path string) (string, bool) {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	b, ok := e.buffers[path]
	return b, ok
}

func (e *editor) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	e.log("fs/read_text_file %s", p.Path)
	if b, ok := e.buffer(p.Path); ok {
		return sdk.ReadTextFileResponse{Content: b}, nil
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (e *editor) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	e.log("fs/write_text_file %s", p.Path)
	e.edMu.Lock()
	save := e.save
	e.edMu.Unlock()
	if save {
		if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
			return sdk.WriteTextFileResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		return sdk.WriteTextFileResponse{}, nil
	}
	e.setBuffer(p.Path, p.Content)
	return sdk.WriteTextFileResponse{}, nil
}

func (e *editor) CreateTerminal(_ context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	line := strings.Join(append([]string{p.Command}, p.Args...), " ")
	e.log("terminal/create %s", line)
	e.edMu.Lock()
	zed := e.zed
	createErr := e.createErr
	e.edMu.Unlock()
	if createErr != nil {
		return sdk.CreateTerminalResponse{}, createErr
	}
	cmd := exec.Command(p.Command, p.Args...)
	if zed {
		cmd = exec.Command("/bin/sh", "-c", line)
	}
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	cmd.Env = os.Environ()
	for _, v := range p.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t := &terminal{cmd: cmd, done: make(chan struct{})}
	if p.OutputByteLimit != nil {
		t.limit = *p.OutputByteLimit
	}
	cmd.Stdout, cmd.Stderr = t, t
	if err := cmd.Start(); err != nil {
		return sdk.CreateTerminalResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	go func() {
		_ = cmd.Wait()
		t.mu.Lock()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			sig := ws.Signal().String()
			t.exit.Signal = &sig
		} else {
			code := ws.ExitStatus()
			t.exit.ExitCode = &code
		}
		t.mu.Unlock()
		close(t.done)
	}()
	e.edMu.Lock()
	if e.terms == nil {
		e.terms = map[string]*terminal{}
	}
	e.nextID++
	id := fmt.Sprintf("term-%d", e.nextID)
	e.terms[id] = t
	e.edMu.Unlock()
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (e *editor) term(id string) (*terminal, error) {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	t := e.terms[id]
	if t == nil || t.released {
		return nil, sdk.NewInvalidParams(map[string]any{"terminalId": id})
	}
	return t, nil
}

func (e *editor) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	e.log("terminal/wait_for_exit %s", p.TerminalId)
	t, err := e.term(p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, sdk.NewRequestCancelled(nil)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return sdk.WaitForTerminalExitResponse{ExitCode: t.exit.ExitCode, Signal: t.exit.Signal}, nil
}

func (e *editor) TerminalOutput(_ context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	e.log("terminal/output %s", p.TerminalId)
	t, err := e.term(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	var exit *sdk.TerminalExitStatus
	select {
	case <-t.done:
		t.mu.Lock()
		x := t.exit
		t.mu.Unlock()
		exit = &x
	default:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return sdk.TerminalOutputResponse{Output: string(t.out), Truncated: t.truncated, ExitStatus: exit}, nil
}

func (e *editor) KillTerminal(_ context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	e.log("terminal/kill %s", p.TerminalId)
	t, err := e.term(p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, err
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	return sdk.KillTerminalResponse{}, nil
}

func (e *editor) ReleaseTerminal(_ context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	e.log("terminal/release %s", p.TerminalId)
	t, err := e.term(p.TerminalId)
	if err != nil {
		return sdk.ReleaseTerminalResponse{}, err
	}
	// Release kills a command still running, as ACP says.
	select {
	case <-t.done:
	default:
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
	e.edMu.Lock()
	t.released = true
	e.edMu.Unlock()
	return sdk.ReleaseTerminalResponse{}, nil
}

// running reports whether any terminal's command is still running.
func (e *editor) running() bool {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	for _, t := range e.terms {
		select {
		case <-t.done:
		default:
			return true
		}
	}
	return false
}

// stopAll kills what a failing test left running.
func (e *editor) stopAll() {
	e.edMu.Lock()
	defer e.edMu.Unlock()
	for _, t := range e.terms {
		select {
		case <-t.done:
		default:
			_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}

// outputOf returns what terminal id printed so far.
func (e *editor) outputOf(id string) string {
	e.edMu.Lock()
	t := e.terms[id]
	e.edMu.Unlock()
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.out)
}
