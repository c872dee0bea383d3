package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
)

// The loop binary is the sandbox helper an editor's terminal runs
// (docs/acp.md): started with the helper argument, it applies the policy
// and runs the command, which writes only where the policy allows.
func TestLoopBinaryIsTheSandboxHelper(t *testing.T) {
	sandboxtest.Require(t)
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	line, err := sandbox.HelperLine(bin, sandbox.Policy{Name: "workspace-write", Writable: []string{ws}},
		[]string{"/bin/sh", "-c", "echo y > " + filepath.Join(ws, "in") + "; echo x > " + filepath.Join(outside, "out")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", "-c", line).CombinedOutput()
	if err == nil {
		t.Errorf("the write outside did not fail: %s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "in")); err != nil {
		t.Errorf("the workspace was not written: %v (%s)", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
		t.Errorf("the helper's command wrote outside: %s", out)
	}
	if out, err := exec.Command(bin, sandbox.HelperArg, "{not json", "--", "true").CombinedOutput(); err == nil {
		t.Errorf("a bad policy ran the command: %s", out)
	}
}
