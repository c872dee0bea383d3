package mcp

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loopdev/loop/internal/environ"
	"github.com/loopdev/loop/internal/sandbox"
)

// proc is one running stdio server. Loop owns its pipes and its Wait, so it
// learns of the exit (and its status) even when the server dies while the
// MCP connection is idle, and so stopping can reach the whole process group.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end of the server's stdin
	stdout *os.File // our read end of the server's stdout
	stderr *tailBuffer
	grace  time.Duration

	exited  chan struct{} // closed once Wait returned and stderr drained
	waitErr error         // Wait's result; read only after exited is closed

	stopOnce sync.Once
	signaled atomic.Bool // stop had to signal: the exit is ours, not a crash
}

// permanentError marks a start failure that retrying cannot fix (the
// command does not exist or cannot be run).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// stderrDrainWait bounds how long an exit waits for the rest of stderr: a
// grandchild that inherited stderr can keep it open after the server died.
const stderrDrainWait = 500 * time.Millisecond

// startProc starts cfg's command in dir (a relative cfg.Cwd resolves against
// dir) with the process environment less the hidden variables, plus
// cfg.Env (which may set a hidden one explicitly), in the OS sandbox sb
// when it is set.
func startProc(cfg ServerConfig, dir string, hide []string, sb *sandbox.Policy, grace time.Duration, logger *slog.Logger) (*proc, error) {
	wd := dir
	if cfg.Cwd != "" {
		wd = cfg.Cwd
		if !filepath.IsAbs(wd) && dir != "" {
			wd = filepath.Join(dir, wd)
		}
	}
	if wd != "" {
		if fi, err := os.Stat(wd); err != nil {
			return nil, &permanentError{fmt.Errorf("working directory: %w", err)}
		} else if !fi.IsDir() {
			return nil, &permanentError{fmt.Errorf("working directory %s is not a directory", wd)}
		}
	}

	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = wd
	cmd.Env = environ.Without(os.Environ(), hide)
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+expandEnv(v)) // exec keeps the last duplicate
	}
	setProcGroup(cmd)

	// Plain *os.File pipes: exec hands them to the child as they are, with no
	// copying goroutines that Wait would block on.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	start := cmd.Start
	if sb != nil {
		start = func() error { return sandbox.Start(cmd, *sb) }
	}
	if err := start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		if sb != nil {
			err = fmt.Errorf("in the %s sandbox: %w", sb.Name, err)
		}
		err = fmt.Errorf("starting %q: %w", cfg.Command, err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			err = &permanentError{err}
		}
		return nil, err
	}
	closeAll(inR, outW, errW) // the child holds its own copies

	p := &proc{cmd: cmd, stdin: inW, stdout: outR, stderr: &tailBuffer{max: 8 << 10}, grace: grace, exited: make(chan struct{})}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer errR.Close()
		p.stderr.copyFrom(errR, logger)
	}()
	go func() {
		err := cmd.Wait()
		select {
		case <-drained:
		case <-time.After(stderrDrainWait):
		}
		p.waitErr = err
		close(p.exited)
	}()
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// diedAlone waits up to d for the process to exit, and reports whether it
// did without Loop's signals. (An exit after Loop closed stdin counts as the
// server's own: servers that crash at startup usually die before the SDK
// notices and closes the connection.)
func (p *proc) diedAlone(d time.Duration) bool {
	return waitClosed(p.exited, d) && !p.signaled.Load()
}

// exitError describes the exit, with the end of stderr, which usually holds
// the reason ("panic: ...", "Error: Cannot find module ...").
func (p *proc) exitError() error {
	<-p.exited
	msg := "process exited"
	if p.waitErr != nil {
		msg += " (" + p.waitErr.Error() + ")"
	} else {
		msg += " (exit status 0)"
	}
	return errors.New(msg + p.stderrSuffix())
}

func (p *proc) stderrSuffix() string {
	if s := p.stderr.lastLines(3, 600); s != "" {
		return "; stderr: " + s
	}
	return ""
}

// stop ends the process: close its stdin (the MCP way to ask a stdio server
// to exit), then SIGTERM and SIGKILL its process group if it lingers.
// Concurrent and repeated calls wait for the one stop.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !waitClosed(p.exited, p.grace) {
			p.signaled.Store(true)
			signalGroup(p.cmd, sigTerm)
			if !waitClosed(p.exited, p.grace) {
				signalGroup(p.cmd, sigKill)
				<-p.exited
			}
		}
		// Children the server left behind share its group.
		signalGroup(p.cmd, sigKill)
		p.stdout.Close()
	})
}

func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// stopOnClose is the write side of the MCP connection: closing the
// connection stops the process.
type stopOnClose struct{ p *proc }

func (w stopOnClose) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w stopOnClose) Close() error                { w.p.stop(); return nil }

// tailBuffer keeps the last max bytes of a stream.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// copyFrom reads r to EOF into t, logging each chunk at debug level.
func (t *tailBuffer) copyFrom(r io.Reader, logger *slog.Logger) {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.Write(buf[:n])
			logger.Debug("mcp server stderr", "text", strings.TrimRight(string(buf[:n]), "\n"))
		}
		if err != nil {
			return
		}
	}
}

// lastLines returns up to n last non-empty lines, joined by " | " and cut to
// at most max bytes (keeping the end).
func (t *tailBuffer) lastLines(n, max int) string {
	t.mu.Lock()
	text := string(t.buf)
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " | ")
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return s
}
