package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
)

// A stdio server started in a session's sandbox writes in the workspace
// and cannot write outside it; an entry with "sandbox": false runs
// without it.
func TestSandboxedStdioServerCannotWriteOutsideTheWorkspace(t *testing.T) {
	sandboxtest.Require(t)
	bin := serverBinary(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	off := false
	m := newTestManager(t, map[string]ServerConfig{
		"boxed": {Command: bin},
		"free":  {Command: bin, Sandbox: &off},
	}, ws)
	m.Sandbox(&sandbox.Policy{Name: "workspace-write", Writable: []string{ws}})
	startReady(t, m)
	write := func(server, path string) Result {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		return mustCall(t, m, "mcp__"+server+"__write_file", string(args))
	}
	if res := write("boxed", filepath.Join(ws, "in.txt")); res.IsError {
		t.Errorf("writing the workspace failed: %+v", res)
	}
	if res := write("boxed", filepath.Join(home, "escape")); !res.IsError {
		t.Errorf("the sandboxed server wrote outside: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(home, "escape")); err == nil {
		t.Error("the file outside exists")
	}
	if res := write("free", filepath.Join(home, "free")); res.IsError {
		t.Errorf(`the "sandbox": false server could not write outside: %+v`, res)
	}
}
