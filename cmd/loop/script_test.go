package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loopdev/loop/rpc/rpctest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets scripts `exec loop` and `rpc start loop`: testscript puts
// this test binary on PATH under that name.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"loop": main, // the binary's own entry, the sandbox helper's included
	})
}

// TestScripts runs testdata/script/*.txtar: the protocol told as
// conversations with the real binary over real pipes.
func TestScripts(t *testing.T) {
	mcpDir := buildMCPServer(t)
	imports, err := filepath.Abs(filepath.Join("..", "..", "internal", "importer", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	// Every frame of every scenario is checked against the protocol's
	// schema when the scenario ends (schema_test.go).
	schema := &protocolSchema{}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		Cmds:                scriptCmds(),
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			if err := rpctest.Setup(env); err != nil {
				return err
			}
			recordFrames(env, schema)
			// Nothing a script runs may ask the terminal go test runs in.
			env.Setenv("LOOP_TTY", "none")
			env.Setenv("LOOP_HOME", filepath.Join(env.WorkDir, "data"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			// The MCP test server (internal/mcp/testdata/mcpserver, real SDK)
			// is on PATH as loop-mcp-test.
			env.Setenv("PATH", mcpDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			// The shell examples of examples/, run by examples.txtar.
			env.Setenv("EXAMPLES", examples)
			// Real Claude Code and Codex files, for import.txtar.
			env.Setenv("IMPORTS", imports)
			env.Setenv("OPENAI_API_KEY", "")
			env.Setenv("ANTHROPIC_API_KEY", "")
			fake := newFakeLLM(env.WorkDir)
			env.Setenv("FAKE_LLM_URL", fake.srv.URL)
			env.Defer(fake.srv.Close)
			setupProcs(env)
			return nil
		},
	})
}

// scriptCondition answers the scripts' own conditions. [mountns]: this
// process may make mount namespaces and mount in them (root with
// CAP_SYS_ADMIN), so a script can give loop a read-only bind mount; root
// ignores permission bits, so nothing else makes a file system refuse it.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "mountns":
		mountOnce.Do(func() {
			canMount = os.Geteuid() == 0 && exec.Command("unshare", "--mount", "true").Run() == nil
		})
		return canMount, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

var (
	mountOnce sync.Once
	canMount  bool
)

// scriptCmds are rpctest's rpc command and this package's process commands.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := rpctest.Cmds()
	for name, fn := range procCmds() {
		cmds[name] = fn
	}
	return cmds
}

// fakeLLM is a model provider on 127.0.0.1 speaking the real SSE formats:
// the n-th request (from 1) is answered with $WORK/llm/<n>.sse (or
// <n>.status + <n>.body for an HTTP error) and recorded in
// $WORK/llm/<n>.request.json. Both OpenAI's /chat/completions and
// Anthropic's /v1/messages paths are served.
type fakeLLM struct {
	dir string
	srv *httptest.Server
	mu  sync.Mutex
	n   int
}

func newFakeLLM(work string) *fakeLLM {
	f := &fakeLLM{dir: filepath.Join(work, "llm")}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	body, _ := readAll(r)
	_ = os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%d.request.json", n)), body, 0o600)
	if status, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("%d.status", n))); err == nil {
		var code int
		fmt.Sscanf(string(status), "%d", &code)
		msg, _ := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("%d.body", n)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(msg)
		return
	}
	sse, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("%d.sse", n)))
	if err != nil {
		http.Error(w, `{"error":{"message":"fake: no response scripted for request `+fmt.Sprint(n)+`"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write(sse)
}

func readAll(r *http.Request) ([]byte, error) {
	defer r.Body.Close()
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, nil
		}
	}
}

// buildMCPServer builds the MCP test server once for every script.
func buildMCPServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "loop-mcp-test"), "./testdata/mcpserver")
	cmd.Dir = filepath.Join("..", "..", "internal", "mcp")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP test server: %v\n%s", err, out)
	}
	return dir
}
