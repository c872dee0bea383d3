package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
	"github.com/loopdev/loop/internal/tools"
)

// mcpSandboxSetup is an engine whose configured stdio servers try to write
// a marker into out, a directory outside the workspace and the temp
// directory: "boxed" in the sandbox of the preset, "free" with
// "sandbox": false.
func mcpSandboxSetup(t *testing.T) (e *Engine, cwd, out string) {
	t.Helper()
	sandboxtest.Require(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, cwd, out, tmp := filepath.Join(base, "data"), filepath.Join(base, "ws"), filepath.Join(base, "out"), filepath.Join(base, "tmp")
	for _, d := range []string{root, cwd, out, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("MCP_OUT", out)
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(`{"turns":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	config := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}},"mcpServers":{` +
		`"boxed":{"command":"sh","args":["-c","echo x > \"$MCP_OUT/boxed-$$\"; exit 3"]},` +
		`"free":{"command":"sh","args":["-c","echo x > \"$MCP_OUT/free-$$\"; exit 3"],"sandbox":false}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = New(Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), Abort) })
	return e, cwd, out
}

func markers(t *testing.T, out, prefix string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(out, prefix+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// Configured stdio servers run in the sandbox of the preset of the session
// that starts them, one set per working directory and sandbox; an entry
// with "sandbox": false runs without it.
func TestMCPStdioServersRunInTheSandboxOfThePreset(t *testing.T) {
	e, cwd, out := mcpSandboxSetup(t)
	boxed := e.mcpFor(cwd, tools.PresetWorkspaceWrite)
	if boxed == nil {
		t.Fatal("no servers")
	}
	if err := boxed.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := markers(t, out, "boxed"); n != 0 {
		t.Errorf("the sandboxed server wrote outside %d times", n)
	}
	if n := markers(t, out, "free"); n == 0 {
		t.Error(`the "sandbox": false server did not run unsandboxed`)
	}
	if e.mcpFor(cwd, tools.PresetAsk) != boxed {
		t.Error("ask does not share workspace-write's servers")
	}
	full := e.mcpFor(cwd, tools.PresetFullAccess)
	if full == boxed {
		t.Fatal("full-access uses the sandboxed servers")
	}
	if err := full.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := markers(t, out, "boxed"); n == 0 {
		t.Error("under full-access the server did not write")
	}
}

// A front end's servers run in the sandbox of the session's preset, and
// start again in the new one when the preset changes.
func TestClientMCPServersFollowThePresetsSandbox(t *testing.T) {
	e, cwd, out := mcpSandboxSetup(t)
	ws, err := e.AddWorkspace(cwd, "ws")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.NewSession(ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPermission("workspace-write"); err != nil {
		t.Fatal(err)
	}
	s.SetMCPServers(map[string]mcp.ServerConfig{"own": {Command: "sh", Args: []string{"-c", `echo x > "$MCP_OUT/own-$$"; exit 3`}}})
	first := s.sessionMCP()
	if err := first.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := markers(t, out, "own"); n != 0 {
		t.Fatalf("the client's server wrote outside under workspace-write %d times", n)
	}
	if _, err := s.SetPermission("full-access"); err != nil {
		t.Fatal(err)
	}
	second := s.sessionMCP()
	if second == first {
		t.Fatal("the servers were not started again for full-access")
	}
	if err := second.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := markers(t, out, "own"); n == 0 {
		t.Error("under full-access the client's server did not run unsandboxed")
	}
}
