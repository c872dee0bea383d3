package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/loopdev/loop/internal/tools"
)

// An MCP server's secrets, the variables its env and headers values name
// and the credentials its url carries, are removed from the engine's log
// and from the server errors snapshots report, like a provider key: here
// a server that prints its token to stderr and exits, which the engine
// logs and reports with the server's stderr.
func TestMCPServerSecretsAreRedactedFromTheLog(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testenv.Missing(t, "no sh")
	}
	// The MCP client reads ${NAME} from the process environment.
	t.Setenv("SOME_MCP_TOKEN", "mcp-env-SECRET1")
	t.Setenv("SOME_MCP_HEADER", "mcp-header-SECRET2")
	root := t.TempDir()
	config := `{"mcpServers":{` +
		`"leaky":{"command":"sh","args":["-c","echo \"token $LEAKY_TOKEN\" >&2; exit 3"],"env":{"LEAKY_TOKEN":"${SOME_MCP_TOKEN}"}},` +
		`"remote":{"url":"http://mcpuser:mcp-url-SECRET3@127.0.0.1:9/mcp","headers":{"X-Api-Key":"${SOME_MCP_HEADER}"},"disabled":true}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e, err := New(Options{DataRoot: root, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), Abort) })

	cwd := t.TempDir()
	m := e.mcpFor(cwd, tools.PresetFullAccess)
	if m == nil {
		t.Fatal("no MCP servers started")
	}
	if err := m.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	var statusErrs []string
	for _, st := range e.mcpStatus(cwd, tools.PresetFullAccess) {
		statusErrs = append(statusErrs, st.Error, st.LastError)
	}
	e.log.Error("mcp request failed", "err", errors.New(`GET "http://mcpuser:mcp-url-SECRET3@127.0.0.1:9/mcp": X-Api-Key mcp-header-SECRET2`))

	out := logs.String()
	if !strings.Contains(out, "token [REDACTED]") {
		t.Errorf("the server's stderr is not in the log, redacted:\n%s", out)
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("log holds an MCP secret:\n%s", out)
	}
	all := strings.Join(statusErrs, "\n")
	if !strings.Contains(all, "token [REDACTED]") || strings.Contains(all, "SECRET") {
		t.Errorf("status errors:\n%s", all)
	}
}
