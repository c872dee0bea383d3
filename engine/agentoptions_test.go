package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
)

// chatServer is a fake OpenAI chat completions server: it answers the
// n-th request with replies[n] (the last one again when they run out) and
// keeps every request body.
type chatServer struct {
	mu      sync.Mutex
	bodies  []map[string]any
	replies []string
}

// chatText is a chat completions stream of one text reply.
func chatText(text string) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text) +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
}

// chatToolCall is a chat completions stream of one tool call.
func chatToolCall(id, name, args string) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":%q,\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%q}}]}}]}\n\n", id, name, args) +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
}

func (c *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(data, &body)
	c.mu.Lock()
	c.bodies = append(c.bodies, body)
	reply := c.replies[min(len(c.bodies), len(c.replies))-1]
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, reply)
}

func (c *chatServer) requests() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.bodies)
}

// agentEngine is an engine whose one model is c, with an MCP server
// "files" configured (never started by these tests) and a workspace.
func agentEngine(t *testing.T, c *chatServer) (*engine.Engine, string) {
	t.Helper()
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	root := t.TempDir()
	cfg := `{"titles":{"enabled":false},"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `","retry":{"attempts":1},"models":[{"id":"gpt-t"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}},"mcpServers":{"files":{"command":"/nonexistent/mcp-files"}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ConfigError(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	return e, t.TempDir()
}

// runPrompt prompts s and waits until its run settled.
func runPrompt(t *testing.T, e *engine.Engine, s *engine.Session, text string) *engine.AgentSettledEvent {
	t.Helper()
	var mu sync.Mutex
	var settled *engine.AgentSettledEvent
	unsubscribe := e.Subscribe(func(ev engine.Event) {
		if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok && ev.SessionID == s.ID() {
			mu.Lock()
			settled = p
			mu.Unlock()
		}
	})
	defer unsubscribe()
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r-" + text, Text: text}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if settled == nil {
		t.Fatal("the run settled without an agent_settled event")
	}
	return settled
}

func toolNames(body map[string]any) []string {
	var names []string
	ts, _ := body["tools"].([]any)
	for _, t := range ts {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		names = append(names, fn["name"].(string))
	}
	return names
}

func systemText(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m := msgs[0].(map[string]any)
	if m["role"] != "system" && m["role"] != "developer" {
		return ""
	}
	s, _ := m["content"].(string)
	return s
}

func TestSystemPromptOptionReplacesLoopsAndAppendFollowsIt(t *testing.T) {
	c := &chatServer{replies: []string{chatText("ok")}}
	e, cwd := agentEngine(t, c)
	s, err := e.NewInMemorySession(cwd, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runPrompt(t, e, s, "first")
	if sys := systemText(c.requests()[0]); !strings.HasPrefix(sys, "You are Loop") {
		t.Fatalf("without options the system prompt is Loop's, got %q", sys)
	}
	if err := s.SetAgentOptions(engine.AgentOptions{SystemPrompt: "You are a pirate.", AppendSystemPrompt: "Answer in one line."}); err != nil {
		t.Fatal(err)
	}
	runPrompt(t, e, s, "second")
	if sys := systemText(c.requests()[1]); sys != "You are a pirate.\n\nAnswer in one line." {
		t.Fatalf("system prompt %q", sys)
	}
	if err := s.SetAgentOptions(engine.AgentOptions{AppendSystemPrompt: "Answer in one line."}); err != nil {
		t.Fatal(err)
	}
	runPrompt(t, e, s, "third")
	if sys := systemText(c.requests()[2]); !strings.HasPrefix(sys, "You are Loop") || !strings.HasSuffix(sys, "\n\nAnswer in one line.") {
		t.Fatalf("appended to Loop's: %q", sys)
	}
}

func TestToolsOptionsChooseTheToolsTheModelIsOffered(t *testing.T) {
	c := &chatServer{replies: []string{chatText("ok")}}
	e, cwd := agentEngine(t, c)
	s, err := e.NewInMemorySession(cwd, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		opts engine.AgentOptions
		want []string
	}{
		{engine.AgentOptions{Tools: []string{"read", "grep"}}, []string{"read", "grep"}},
		{engine.AgentOptions{DisallowedTools: []string{"bash", "write", "edit"}}, []string{"read", "ls", "grep", "find"}},
		{engine.AgentOptions{Tools: []string{"read", "bash"}, DisallowedTools: []string{"bash"}}, []string{"read"}},
		{engine.AgentOptions{Tools: []string{}}, nil},
	}
	for i, st := range steps {
		if err := s.SetAgentOptions(st.opts); err != nil {
			t.Fatal(err)
		}
		runPrompt(t, e, s, fmt.Sprint("prompt ", i))
		got := toolNames(c.requests()[i])
		slices.Sort(got)
		want := slices.Clone(st.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("options %+v: offered %v, want %v", st.opts, got, want)
		}
	}
}

func TestDisallowedToolNamedByTheModelDoesNotRun(t *testing.T) {
	c := &chatServer{replies: []string{
		chatToolCall("c1", "write", `{"path":"made.txt","content":"x"}`),
		chatText("done"),
	}}
	e, cwd := agentEngine(t, c)
	s, err := e.NewInMemorySession(cwd, engine.SessionOptions{Permission: "full-access"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAgentOptions(engine.AgentOptions{DisallowedTools: []string{"write"}}); err != nil {
		t.Fatal(err)
	}
	if got := runPrompt(t, e, s, "write a file"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %s %+v", got.Outcome, got.Error)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("the disallowed write ran: %v", err)
	}
	msgs := s.Snapshot().State.Messages
	res := msgs[2]
	if res.ToolName != "write" || !res.IsError || !strings.Contains(res.Text(), "not available") {
		t.Fatalf("tool result %+v", res)
	}
	// Tools given without it: the same.
	if err := s.SetAgentOptions(engine.AgentOptions{Tools: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.bodies, c.replies = nil, []string{chatToolCall("c2", "write", `{"path":"made.txt","content":"x"}`), chatText("done")}
	c.mu.Unlock()
	runPrompt(t, e, s, "write it again")
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("a write outside tools ran: %v", err)
	}
}

func TestMaxTurnsSettlesTheRunWithBudgetExceeded(t *testing.T) {
	c := &chatServer{replies: []string{chatToolCall("c1", "ls", `{}`)}}
	e, cwd := agentEngine(t, c)
	s, err := e.NewInMemorySession(cwd, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAgentOptions(engine.AgentOptions{MaxTurns: 2}); err != nil {
		t.Fatal(err)
	}
	got := runPrompt(t, e, s, "list forever")
	if got.Outcome != engine.OutcomeError || got.Error == nil || got.Error.Code != engine.CodeBudgetExceeded || !strings.Contains(got.Error.Message, "maxTurns") {
		t.Fatalf("settled %s %+v", got.Outcome, got.Error)
	}
	if n := len(c.requests()); n != 2 {
		t.Fatalf("%d model requests, want 2", n)
	}
	// The limit is per run: resuming makes two more.
	if !s.Snapshot().State.CanResume {
		t.Fatal("a run stopped by maxTurns should be resumable")
	}
}

func TestAgentOptionsRefuseUnknownToolNames(t *testing.T) {
	c := &chatServer{replies: []string{chatText("ok")}}
	e, cwd := agentEngine(t, c)
	s, err := e.NewInMemorySession(cwd, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []engine.AgentOptions{
		{Tools: []string{"reed"}},
		{DisallowedTools: []string{"Bash"}},
		{Tools: []string{"mcp__nowhere__x"}},
		{DisallowedTools: []string{"mcp__nowhere"}},
		{MaxTurns: -1},
	} {
		if err := s.SetAgentOptions(o); engine.CodeOf(err) != engine.CodeInvalidParams {
			t.Errorf("%+v: got %v, want invalid_params", o, err)
		}
		if err := e.CheckAgentOptions(cwd, o); engine.CodeOf(err) != engine.CodeInvalidParams {
			t.Errorf("CheckAgentOptions %+v: got %v, want invalid_params", o, err)
		}
	}
	for _, o := range []engine.AgentOptions{
		{Tools: []string{"read", "mcp__files"}},
		{Tools: []string{"mcp__files__*"}},
		{DisallowedTools: []string{"mcp__files__delete"}},
	} {
		if err := s.SetAgentOptions(o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
