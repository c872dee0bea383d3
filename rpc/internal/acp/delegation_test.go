package acp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
	"github.com/loopdev/loop/internal/tools"
)

const filesScript = `{"turns":[
 {"match":"look","steps":[{"toolCall":{"id":"r1","name":"read","arguments":{"path":"hello.txt"}}}]},
 {"match":"look","steps":[{"text":"read it"}]},
 {"match":"change","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"new.txt","content":"N\n"}}}]},
 {"match":"change","steps":[{"toolCall":{"id":"e1","name":"edit","arguments":{"path":"hello.txt","oldText":"unsaved","newText":"edited"}}}]},
 {"match":"change","steps":[{"text":"changed"}]}
]}`

// TestEditorFiles: with fs advertised, read returns the editor's unsaved
// buffer instead of the disk's content, and write and edit land in the
// editor's buffers; an editor that has not saved leaves the disk as it was.
func TestEditorFiles(t *testing.T) {
	h := newHarness(t, filesScript)
	c := h.connect()
	c.rec.save = false
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)
	hello, newFile := filepath.Join(h.work, "hello.txt"), filepath.Join(h.work, "new.txt")
	c.rec.setBuffer(hello, "hello\nunsaved\n")

	if stop := c.mustPrompt(ns.SessionId, "look"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	card := fold(c.frames.updates(sid), true).Tools["r1"]
	if got := dump(card["content"]); card["status"] != "completed" || !strings.Contains(got, "unsaved") || strings.Contains(got, "world") {
		t.Fatalf("read card: %s", dump(card))
	}
	if calls := c.rec.callLog("fs/read_text_file"); !slices.Contains(calls, "fs/read_text_file "+hello) {
		t.Fatalf("fs calls: %v", calls)
	}

	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "workspace-write"}); err != nil {
		t.Fatal(err)
	}
	if stop := c.mustPrompt(ns.SessionId, "change"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	if b, _ := c.rec.buffer(newFile); b != "N\n" {
		t.Fatalf("new.txt buffer %q", b)
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Fatalf("new.txt reached the disk: %v", err)
	}
	if b, _ := c.rec.buffer(hello); b != "hello\nedited\n" {
		t.Fatalf("hello.txt buffer %q", b)
	}
	if b, _ := os.ReadFile(hello); string(b) != "hello\nworld\n" {
		t.Fatalf("hello.txt on disk %q", b)
	}
	// The edit's diff is the buffer's change.
	f := fold(c.frames.updates(sid), true)
	diff := f.Tools["e1"]["content"].([]any)[0].(map[string]any)
	if diff["type"] != "diff" || diff["oldText"] != "hello\nunsaved\n" || diff["newText"] != "hello\nedited\n" {
		t.Fatalf("edit card: %s", dump(f.Tools["e1"]))
	}
}

const terminalScript = `{"turns":[
 {"match":"run","steps":[{"toolCall":{"id":"b1","name":"bash","arguments":{"command":"echo out-$((6*7)) pager=$PAGER; echo err >&2; exit 3"}}}]},
 {"match":"run","steps":[{"text":"ran"}]},
 {"match":"slow","steps":[{"toolCall":{"id":"b2","name":"bash","arguments":{"command":"echo started; sleep 30"}}}]},
 {"match":"slow","steps":[{"text":"unreachable"}]},
 {"match":"after","steps":[{"text":"still here"}]}
]}`

// TestEditorTerminal: with terminal advertised, bash runs in a terminal of
// the client, shown on the call's card; the model gets its output and exit
// code. A cancel during the command kills the terminal and releases it.
func TestEditorTerminal(t *testing.T) {
	h := newHarness(t, terminalScript)
	c := h.connect()
	c.initializeWith(sdk.ClientCapabilities{Terminal: true})
	ns := c.newSession()
	sid := string(ns.SessionId)
	// full-access: a preset with an OS sandbox runs bash in Loop instead
	// (TestSandboxedBashRunsInLoopNotInTheEditorsTerminal).
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "full-access"}); err != nil {
		t.Fatal(err)
	}
	sess, err := h.eng.Session(sid)
	if err != nil {
		t.Fatal(err)
	}

	if stop := c.mustPrompt(ns.SessionId, "run"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	// A program and its arguments, as the schema says: the shell bash
	// uses locally runs the line.
	if got := strings.Join(c.rec.callLog("terminal/"), "\n"); !strings.HasPrefix(got, "terminal/create "+tools.Shell()+" -c echo out-$((6*7))") ||
		!strings.Contains(got, "terminal/wait_for_exit term-1") || !strings.Contains(got, "terminal/output term-1") ||
		!strings.HasSuffix(got, "terminal/release term-1") {
		t.Fatalf("terminal calls:\n%s", got)
	}
	card := fold(c.frames.updates(sid), true).Tools["b1"]
	content := card["content"].([]any)
	if len(content) != 1 || dump(content[0]) != dump(map[string]any{"type": "terminal", "terminalId": "term-1"}) || card["status"] != "failed" {
		t.Fatalf("bash card: %s", dump(card))
	}
	// The terminal was on the card before it was released, as ACP asks.
	embedded, released := -1, -1
	for i, fr := range c.frames.all() {
		if fr["method"] == "session/update" && strings.Contains(dump(fr), `"terminalId": "term-1"`) && embedded < 0 {
			embedded = i
		}
		if fr["method"] == "terminal/release" {
			released = i
		}
	}
	if embedded < 0 || released < embedded {
		t.Fatalf("terminal embedded at frame %d, released at %d", embedded, released)
	}
	if got := toolResult(t, sess.Snapshot().State.Messages, "b1"); got != "out-42 pager=cat\nerr\n\n[exit code 3]" {
		t.Fatalf("bash result %q", got)
	}

	type result struct {
		stop sdk.StopReason
		err  error
	}
	done := make(chan result, 1)
	go func() { r, err := c.prompt(ns.SessionId, "slow"); done <- result{r.StopReason, err} }()
	waitFor(t, "the slow command to start", func() bool {
		return len(c.rec.callLog("terminal/wait_for_exit term-2")) > 0 && c.rec.outputOf("term-2") == "started\n"
	})
	if err := c.cs.Cancel(ctx(t), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.stop != sdk.StopReasonCancelled {
			t.Fatalf("slow: %q %v", r.stop, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt was not answered after session/cancel")
	}
	waitFor(t, "the terminal's release", func() bool { return len(c.rec.callLog("terminal/release term-2")) > 0 })
	if len(c.rec.callLog("terminal/kill term-2")) != 1 || c.rec.running() {
		t.Fatalf("terminal calls %v; running: %v", c.rec.callLog("terminal/"), c.rec.running())
	}
	if got := toolResult(t, sess.Snapshot().State.Messages, "b2"); !strings.HasPrefix(got, "started\n") || !strings.Contains(got, "command aborted") {
		t.Fatalf("aborted result %q", got)
	}
	if stop := c.mustPrompt(ns.SessionId, "after"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("after cancel: %q", stop)
	}
}

// TestSandboxedBashRunsInLoopNotInTheEditorsTerminal: without a sandbox
// helper (engine.Options.SandboxHelper, which the loop binary sets) Loop
// cannot sandbox the editor's terminal, so under workspace-write, where
// bash runs in the OS sandbox, the command runs in Loop and no terminal
// is created.
func TestSandboxedBashRunsInLoopNotInTheEditorsTerminal(t *testing.T) {
	sandboxtest.Require(t)
	h := newHarness(t, terminalScript)
	c := h.connect()
	c.initializeWith(sdk.ClientCapabilities{Terminal: true})
	ns := c.newSession()
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "workspace-write"}); err != nil {
		t.Fatal(err)
	}
	if stop := c.mustPrompt(ns.SessionId, "run"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	if got := c.rec.callLog("terminal/"); len(got) != 0 {
		t.Fatalf("terminal calls under the sandbox: %v", got)
	}
	sess, err := h.eng.Session(string(ns.SessionId))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(t, sess.Snapshot().State.Messages, "b1"); !strings.HasPrefix(got, "out-42 pager=cat\nerr\n\n[exit code 3]") || !strings.Contains(got, "workspace-write OS sandbox") {
		t.Fatalf("bash result %q", got)
	}
}

func toolResult(t *testing.T, msgs []convo.Message, callID string) string {
	t.Helper()
	for _, m := range msgs {
		if m.Role == convo.RoleToolResult && m.ToolCallID == callID {
			var s string
			for _, b := range m.Content {
				s += b.Text
			}
			return s
		}
	}
	t.Fatalf("no result for %s", callID)
	return ""
}

const mcpScript = `{"log":"requests.log","turns":[
 {"match":"echo","steps":[{"toolCall":{"id":"m1","name":"mcp__tester__echo","arguments":{"text":"hi there"}}}]},
 {"match":"echo","steps":[{"text":"echoed"}]}
]}`

// TestClientMCPServer: an MCP server named in session/new's mcpServers is
// started for the session; the model is offered its tools, and a call asks
// for permission in the ask mode, then runs.
func TestClientMCPServer(t *testing.T) {
	bin := buildMCPServer(t)
	h := newHarness(t, mcpScript)
	c := h.connect()
	ini := c.initialize()
	if !ini.AgentCapabilities.McpCapabilities.Http || ini.AgentCapabilities.McpCapabilities.Sse {
		t.Fatalf("mcpCapabilities %s", dump(ini.AgentCapabilities.McpCapabilities))
	}
	ns, err := c.cs.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: h.work, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "tester", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sid := string(ns.SessionId)
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	c.rec.answer = selectOption("allow_once")
	if stop := c.mustPrompt(ns.SessionId, "echo"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	if n := c.rec.permissionCount(); n != 1 || string(c.rec.permissions[0].ToolCall.ToolCallId) != "m1" {
		t.Fatalf("%d permission requests: %s", n, dump(c.rec.permissions))
	}
	card := fold(c.frames.updates(sid), true).Tools["m1"]
	if card["status"] != "completed" || !strings.Contains(dump(card["content"]), "echo: hi there") {
		t.Fatalf("mcp card: %s", dump(card))
	}
	if b, err := os.ReadFile(filepath.Join(h.root, "requests.log")); err != nil || !strings.Contains(string(b), "mcp__tester__echo") {
		t.Fatalf("the model was not offered the tool: %v", err)
	}

	// Closing the session stops the servers the client named.
	sess, err := h.eng.Session(sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.Snapshot().MCPServers) != 1 {
		t.Fatalf("servers: %s", dump(sess.Snapshot().MCPServers))
	}
	if _, err := c.cs.CloseSession(ctx(t), sdk.CloseSessionRequest{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if n := len(sess.Snapshot().MCPServers); n != 0 {
		t.Fatalf("%d servers after close", n)
	}
}

// buildMCPServer builds internal/mcp's test server (a stdio MCP server with
// an echo tool) with the go command running the tests.
func buildMCPServer(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mcpserver")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", out, "./testdata/mcpserver")
	cmd.Dir = filepath.Join("..", "..", "..", "internal", "mcp")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the MCP test server: %v\n%s", err, b)
	}
	return out
}
