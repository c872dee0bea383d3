package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
)

// machine is a fake user's machine under one temporary directory: HOME
// with a key, Loop's data root, a workspace that is a git repository, a
// temp directory, and TMPDIR and HOME pointing there.
type machine struct {
	home, data, ws, tmp, outside string
}

func newMachine(t *testing.T) machine {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := machine{
		home:    filepath.Join(base, "home"),
		data:    filepath.Join(base, "home", ".local", "share", "loop"),
		ws:      filepath.Join(base, "home", "src", "project"),
		tmp:     filepath.Join(base, "tmp"),
		outside: filepath.Join(base, "outside"),
	}
	mustWrite(t, filepath.Join(m.home, ".ssh", "id_rsa"), "PRIVATE KEY\n")
	mustWrite(t, filepath.Join(m.home, ".profile"), "# profile\n")
	mustWrite(t, filepath.Join(m.data, "config.json"), "{}\n")
	mustWrite(t, filepath.Join(m.ws, "main.go"), "package main\n")
	mustWrite(t, filepath.Join(m.ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	mustWrite(t, filepath.Join(m.outside, "file"), "outside\n")
	if err := os.MkdirAll(m.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", m.home)
	t.Setenv("TMPDIR", m.tmp)
	return m
}

func (m machine) env(p Preset, network bool) Env {
	return Env{Cwd: m.ws, Preset: p, Sandbox: SandboxPolicy(p, m.ws, SandboxConfig{
		Network: network, Home: m.home, DataRoot: m.data, TempDir: os.TempDir(),
	})}
}

func bash(t *testing.T, env Env, command string) Result {
	t.Helper()
	return run(t, env, NameBash, map[string]any{"command": command})
}

// Under workspace-write a bash command changes the workspace, its git
// metadata and the temp directory, and nothing else: not $HOME, not the
// data root, not /etc, not through a symlink or a hard link out of the
// workspace; it cannot read ~/.ssh. Full-access has no sandbox.
func TestBashUnderWorkspaceWriteWritesOnlyTheWorkspace(t *testing.T) {
	sandboxtest.Require(t)
	m := newMachine(t)
	env := m.env(PresetWorkspaceWrite, false)
	wantOK(t, bash(t, env, "echo x > new.txt && mkdir -p a/b && echo y > a/b/c && echo z > .git/ORIG_HEAD && echo t > $TMPDIR/t"))
	mustSymlink(t, m.home, filepath.Join(m.ws, "home"))
	for _, c := range []string{
		"echo x >> $HOME/.profile",
		"echo x > " + filepath.Join(m.data, "sessions"),
		"echo x >> " + filepath.Join(m.data, "config.json"),
		"echo x > /etc/loop-sandbox-test",
		"echo x > home/new",
		"ln $HOME/.profile hard && echo x >> hard",
		"cat $HOME/.ssh/id_rsa",
		"sh -c 'echo x > $HOME/child'",
		"(echo x > $HOME/bg) & wait $!",
		"nohup sh -c 'echo x > $HOME/nohup' >/dev/null 2>&1; test -e $HOME/nohup",
	} {
		r := bash(t, env, c)
		text := wantErr(t, r, "workspace-write OS sandbox", "sandbox.writable", "full-access")
		if strings.Contains(text, "PRIVATE KEY") {
			t.Errorf("%q read the key: %s", c, text)
		}
		if r.Details["sandbox"] != "workspace-write" {
			t.Errorf("%q: details %v", c, r.Details)
		}
	}
	os.Remove("/etc/loop-sandbox-test")
	if b, _ := os.ReadFile(filepath.Join(m.home, ".profile")); string(b) != "# profile\n" {
		t.Errorf(".profile changed: %q", b)
	}
	for _, name := range []string{"new", "child", "bg", "nohup"} {
		if _, err := os.Stat(filepath.Join(m.home, name)); err == nil {
			t.Errorf("$HOME/%s was written", name)
		}
	}
	if r := bash(t, env, "cat $HOME/.ssh/id_rsa"); r.Details["sandboxDenied"] != true {
		t.Errorf("a permission error is not marked: %v", r.Details)
	}

	full := m.env(PresetFullAccess, false)
	if full.Sandbox != nil {
		t.Fatalf("full-access has a sandbox: %+v", full.Sandbox)
	}
	wantOK(t, bash(t, full, "echo x >> $HOME/.profile && cat $HOME/.ssh/id_rsa"))
}

// Under read-only, bash runs without approval in read-only's sandbox (the
// one MCP servers of a read-only session get): it reads the workspace,
// writes nowhere but the temp directory (not the workspace, not its git
// metadata, not $HOME), cannot read ~/.ssh and cannot connect over TCP.
func TestReadOnlyBashWritesOnlyTemp(t *testing.T) {
	sandboxtest.Require(t)
	m := newMachine(t)
	if d, reason := Decide(PresetReadOnly, true, NameBash, js(t, map[string]any{"command": "ls"}), m.ws); d != Allow {
		t.Fatalf("read-only bash with a sandbox: %v %s", d, reason)
	}
	env := m.env(PresetReadOnly, false)
	wantOK(t, bash(t, env, "echo t > $TMPDIR/t && cat main.go"))
	if b, err := os.ReadFile(filepath.Join(m.tmp, "t")); err != nil || string(b) != "t\n" {
		t.Errorf("temp file: %q %v", b, err)
	}
	wantErr(t, bash(t, env, "echo x > new.txt"), "read-only OS sandbox", "writes are allowed only in "+m.tmp, "workspace-write preset lets commands write the workspace", "full-access")
	wantErr(t, bash(t, env, "echo x >> main.go"))
	wantErr(t, bash(t, env, "echo x > .git/x"))
	wantErr(t, bash(t, env, "sh -c 'echo x > $HOME/child'"))
	if text := wantErr(t, bash(t, env, "cat $HOME/.ssh/id_rsa")); strings.Contains(text, "PRIVATE KEY") {
		t.Errorf("read the key: %s", text)
	}
	for _, p := range []string{filepath.Join(m.ws, "new.txt"), filepath.Join(m.ws, ".git", "x"), filepath.Join(m.home, "child")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(m.ws, "main.go")); string(b) != "package main\n" {
		t.Errorf("main.go changed: %q", b)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		return // the TCP check uses bash's /dev/tcp
	}
	connect := pongServer(t)
	if text := wantErr(t, bash(t, env, connect), "TCP connect and bind are denied"); strings.Contains(text, "pong") {
		t.Errorf("connected without sandbox.network: %s", text)
	}
	if text := wantOK(t, bash(t, m.env(PresetReadOnly, true), connect)); !strings.Contains(text, "pong") {
		t.Errorf("no answer with sandbox.network: %s", text)
	}
}

// pongServer listens on 127.0.0.1, answers each connection "pong" and
// returns a bash command that connects and prints the answer.
func pongServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("pong\n"))
			c.Close()
		}
	})
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { ln.Close() })
	return fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -n1 <&3", ln.Addr().(*net.TCPAddr).Port)
}

func TestBashReachesTCPOnlyWithSandboxNetwork(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIP: the check uses bash's /dev/tcp")
	}
	m := newMachine(t)
	connect := pongServer(t)
	r := bash(t, m.env(PresetWorkspaceWrite, false), connect)
	if text := wantErr(t, r, "TCP connect and bind are denied"); strings.Contains(text, "pong") {
		t.Errorf("connected without sandbox.network: %s", text)
	}
	if text := wantOK(t, bash(t, m.env(PresetWorkspaceWrite, true), connect)); !strings.Contains(text, "pong") {
		t.Errorf("no answer with sandbox.network: %s", text)
	}
}

// In the editor's terminal a sandboxed command runs through the sandbox
// helper (the loop binary; here the test binary, TestMain): the terminal
// runs the helper, which applies the sandbox and then runs the command.
func TestSandboxedBashInTheEditorsTerminalRunsThroughTheHelper(t *testing.T) {
	sandboxtest.Require(t)
	m := newMachine(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The "editor" runs the command line with sh, as ACP clients do.
	term := &fakeTerminal{fn: func(_ context.Context, req TerminalRequest) (TerminalResult, error) {
		cmd := exec.Command("/bin/sh", "-c", req.Command)
		cmd.Dir = req.Cwd
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			return TerminalResult{}, err
		}
		return TerminalResult{Output: string(out), ExitCode: exitCode(code)}, nil
	}}
	env := m.env(PresetWorkspaceWrite, false)
	env.Terminal, env.SandboxHelper = term, self
	if text := wantOK(t, bash(t, env, "echo in > inside.txt && echo \"quoted 'words'\"")); !strings.Contains(text, "quoted 'words'") {
		t.Errorf("output %q", text)
	}
	r := bash(t, env, "echo x > $HOME/escape; cat $HOME/.ssh/id_rsa")
	text := wantErr(t, r, "workspace-write OS sandbox")
	if strings.Contains(text, "PRIVATE KEY") || r.Details["sandboxDenied"] != true {
		t.Errorf("result %q, details %v", text, r.Details)
	}
	if _, err := os.Stat(filepath.Join(m.home, "escape")); err == nil {
		t.Error("the editor's terminal wrote outside")
	}
	if _, err := os.Stat(filepath.Join(m.ws, "inside.txt")); err != nil {
		t.Errorf("the workspace was not written: %v", err)
	}
	if len(term.reqs) != 2 || !strings.Contains(term.reqs[0].Command, sandbox.HelperArg) {
		t.Errorf("terminal requests %+v", term.reqs)
	}
}

// Without a helper to sandbox it in the editor's terminal, a sandboxed
// command runs in Loop instead, and the terminal is not asked.
func TestSandboxedBashDoesNotUseTheEditorsTerminal(t *testing.T) {
	sandboxtest.Require(t)
	m := newMachine(t)
	term := &fakeTerminal{fn: func(context.Context, TerminalRequest) (TerminalResult, error) {
		return TerminalResult{Output: "from the editor", ExitCode: exitCode(0)}, nil
	}}
	env := m.env(PresetWorkspaceWrite, false)
	env.Terminal = term
	if text := wantOK(t, bash(t, env, "echo local")); !strings.Contains(text, "local") {
		t.Errorf("output %q", text)
	}
	wantErr(t, bash(t, env, "echo x > $HOME/x"))
	if len(term.reqs) != 0 {
		t.Errorf("the terminal ran %d sandboxed commands", len(term.reqs))
	}
}

// A worktree's git metadata lives outside it: its git directory and the
// common one are writable, so commits work.
func TestSandboxPolicyCoversAWorktreesGitDirectories(t *testing.T) {
	base := t.TempDir()
	main := filepath.Join(base, "main")
	wt := filepath.Join(base, "wt")
	gitdir := filepath.Join(main, ".git", "worktrees", "wt")
	mustWrite(t, filepath.Join(gitdir, "commondir"), "../..\n")
	mustWrite(t, filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
	if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := SandboxPolicy(PresetWorkspaceWrite, filepath.Join(wt, "sub"), SandboxConfig{})
	want := []string{filepath.Join(wt, "sub"), gitdir, filepath.Join(main, ".git")}
	if fmt.Sprint(p.Writable) != fmt.Sprint(want) {
		t.Errorf("writable %v, want %v", p.Writable, want)
	}
}

// BenchmarkBashCall is one bash call (`true`) under workspace-write with
// and without the sandbox, with the real home's key stores denied; the
// difference is what the sandbox adds to a call (docs/performance.md).
func BenchmarkBashCall(b *testing.B) {
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	tool, _ := Lookup(NameBash)
	args := json.RawMessage(`{"command":"true"}`)
	for _, sandboxed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(b *testing.B) {
			env := Env{Cwd: ws, Preset: PresetWorkspaceWrite}
			if sandboxed {
				if st := sandbox.Probe(); !st.Available {
					b.Skipf("SKIP: the OS sandbox is %s", st)
				}
				env.Sandbox = SandboxPolicy(PresetWorkspaceWrite, ws, SandboxConfig{
					Home: home, DataRoot: filepath.Join(home, ".local", "share", "loop"), TempDir: os.TempDir(),
				})
			}
			for b.Loop() {
				if r := tool.Run(context.Background(), env, args, nil); r.IsError {
					b.Fatal(r.Text())
				}
			}
		})
	}
}
