package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/creack/pty"
)

// ttyRun is loop run started in its own session whose controlling
// terminal is a pseudo-terminal, while stdin and stdout stay pipes: a
// person at a terminal running `... | loop run ... > file`.
type ttyRun struct {
	t              *testing.T
	cmd            *exec.Cmd
	pt             *os.File // the terminal's master side: what the person sees and types
	stdout, stderr bytes.Buffer

	mu     sync.Mutex
	screen strings.Builder
	seen   int // how much of screen waitFor has consumed
}

// newDataRoot writes a data root with a scripted model and returns it and
// a project directory.
func newDataRoot(t *testing.T, script string) (data, proj string) {
	t.Helper()
	dir := t.TempDir()
	data, proj = filepath.Join(dir, "data"), filepath.Join(dir, "proj")
	for _, d := range []string{data, proj} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return data, proj
}

// loopAndPty finds the loop binary and opens a pseudo-terminal; the test
// is skipped where there is none.
func loopAndPty(t *testing.T) (bin string, pt, tty *os.File) {
	t.Helper()
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	pt, tty, err = pty.Open()
	if err != nil {
		testenv.Missing(t, "no pseudo-terminal: %v", err)
	}
	return bin, pt, tty
}

func startOnTerminal(t *testing.T, data, proj string, args ...string) *ttyRun {
	t.Helper()
	bin, pt, tty := loopAndPty(t)
	r := &ttyRun{t: t, pt: pt, cmd: loopCommand(bin, data, proj, append([]string{"run"}, args...)...)}
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	// fd 3 in the child, made its controlling terminal in a new session.
	r.cmd.ExtraFiles = []*os.File{tty}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go record(pt, &r.mu, &r.screen)
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		pt.Close()
	})
	return r
}

// loopCommand is the loop binary run in proj with the data root data,
// with no provider keys and without the variable that keeps scripts off
// the terminal (ttyEnv), for the tests that give it a pseudo-terminal.
func loopCommand(bin, data, proj string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = proj
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, ttyEnv+"=") && !strings.HasPrefix(kv, "LOOP_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LOOP_HOME="+data, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	return cmd
}

// record copies what the terminal's master side reads into screen, under
// mu, until the terminal closes.
func record(pt *os.File, mu *sync.Mutex, screen *strings.Builder) {
	buf := make([]byte, 4096)
	for {
		n, err := pt.Read(buf)
		mu.Lock()
		screen.Write(buf[:n])
		mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor waits until the terminal shows text after what was seen before.
func (r *ttyRun) waitFor(text string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		s := r.screen.String()
		if i := strings.Index(s[r.seen:], text); i >= 0 {
			r.seen += i + len(text)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.Fatalf("the terminal never showed %q; it shows:\n%s\nstderr:\n%s", text, r.screen.String(), r.stderr.String())
}

func (r *ttyRun) typeLine(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.pt, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// wait waits for the exit and returns its status.
func (r *ttyRun) wait() int {
	r.t.Helper()
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return 0
}

func TestRunAsksApprovalOnTheControllingTerminal(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"new.txt","content":"x"}}}]},
		{"steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"no.txt","content":"y"}}}]},
		{"steps":[{"text":"Wrote one."}]}]}`)
	r := startOnTerminal(t, data, proj, "--permission", "ask", "make files")
	r.waitFor(`allow write {"path":"new.txt","content":"x"}? [y] once, [a] for this session, [n] no: `)
	r.typeLine("y")
	r.waitFor(`allow write {"path":"no.txt","content":"y"}?`)
	r.typeLine("n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, r.stderr.String())
	}
	if got := r.stdout.String(); got != "Wrote one.\n" {
		t.Fatalf("stdout %q: the questions belong on the terminal, not stdout", got)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "new.txt")); err != nil || string(b) != "x" {
		t.Fatalf("the approved write: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(proj, "no.txt")); err == nil {
		t.Fatal("the rejected write ran")
	}
	if !strings.Contains(r.stderr.String(), "tool: write failed: The user rejected this tool call.") {
		t.Fatalf("stderr:\n%s", r.stderr.String())
	}
}

func TestRunWaitsForFlushOnTheTerminalWhenTheSaveFails(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"touchFile":"reached"},{"waitFile":"gate"},{"text":"kept"}]}]}`)
	r := startOnTerminal(t, data, proj, "--output", "json", "save me")
	for {
		if _, err := os.Stat(filepath.Join(data, "reached")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	dirs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("sessions: %v", dirs)
	}
	// The header's temporary name is a directory: publication fails.
	blocker := filepath.Join(dirs[0], "header.json.tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitFor("type /flush to save it")
	r.waitFor("loop (unsaved)> ")
	r.typeLine("/exit")
	r.waitFor("the result is not saved yet; type /flush once the problem is repaired")
	r.typeLine("/flush")
	r.waitFor("still not saved")
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	r.typeLine("/flush")
	r.waitFor("loop: saved")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, r.stderr.String())
	}
	if !strings.Contains(r.stdout.String(), `"outcome":"completed","text":"kept","error":null`) {
		t.Fatalf("stdout: %s", r.stdout.String())
	}
	msgs, err := os.ReadFile(filepath.Join(dirs[0], "messages.jsonl"))
	if err != nil || !strings.Contains(string(msgs), `"text":"kept"`) {
		t.Fatalf("the flushed history: %s %v", msgs, err)
	}
}

// make run serves the protocol to a person at a terminal (README.md): the
// hints it prints on stderr must work when pasted exactly as printed, one
// after another, from initialize to a saved answer read back.
func TestServerHintsOnATerminalLeadFromInitializeToASavedAnswer(t *testing.T) {
	bin, pt, tty := loopAndPty(t)
	defer pt.Close()
	cmd := exec.Command(bin, "serve", "--demo", "--data-dir", t.TempDir(), "--log-level", "error")
	cmd.Stdin = tty
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	go io.Copy(io.Discard, pt) // the terminal's echo
	replies := make(chan string, 1024)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			replies <- sc.Text()
		}
	}()
	hint := bufio.NewReader(stderr)
	var pasted []string
	for len(pasted) == 0 || !strings.Contains(pasted[len(pasted)-1], `"method":"session/get"`) {
		what, err := hint.ReadString('\n')
		if err != nil {
			t.Fatalf("after pasting %q: stderr ended: %v", pasted, err)
		}
		if !strings.HasPrefix(what, "loop: ") || !strings.HasSuffix(what, ":\n") {
			t.Fatalf("after pasting %q: not a hint: %q", pasted, what)
		}
		line, err := hint.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(pt, line); err != nil {
			t.Fatal(err)
		}
		pasted = append(pasted, line)
	}
	want := []string{`"method":"initialize"`, `"method":"session/new"`, `"method":"session/prompt"`, `"method":"session/get"`}
	for i, w := range want {
		if i >= len(pasted) || !strings.Contains(pasted[i], w) {
			t.Fatalf("the hints pasted: %q, want in turn %q", pasted, want)
		}
	}
	for reply := range replies {
		if strings.HasPrefix(reply, `{"id":4,`) {
			if !strings.Contains(reply, `"result":{`) || !strings.Contains(reply, `"role":"assistant"`) {
				t.Fatalf("session/get as pasted: %s", reply)
			}
			return
		}
		if strings.Contains(reply, `"error":`) {
			t.Fatalf("a pasted request failed: %s", reply)
		}
	}
	t.Fatal("stdout ended before session/get answered")
}
