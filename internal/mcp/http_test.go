package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// newHTTPServer serves an in-process MCP server with an echo tool over
// streamable HTTP on 127.0.0.1, refusing requests without the bearer token.
func newHTTPServer(t *testing.T, token string) (url string, seen func() []string) {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "httptest", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "http echo: " + in.Text}}}, nil, nil
		})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)

	var (
		mu     sync.Mutex
		traces []string
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		traces = append(traces, r.Method+" "+r.Header.Get("X-Loop-Test"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), traces...)
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

func TestStreamableHTTP(t *testing.T) {
	url, seen := newHTTPServer(t, "tok123")
	t.Setenv("MCPTEST_TOKEN", "tok123")
	m := newTestManager(t, map[string]ServerConfig{
		"remote": {URL: url, Headers: map[string]string{"Authorization": "Bearer ${MCPTEST_TOKEN}", "X-Loop-Test": "yes"}},
	}, "")
	startReady(t, m)

	st := statusOf(t, m, "remote")
	if st.State != StateReady || st.Transport != TransportHTTP || st.Tools != 1 {
		t.Fatalf("status = %+v", st)
	}
	tools := m.Tools()
	if len(tools) != 1 || tools[0].Name != "mcp__remote__echo" || tools[0].ToolName != "echo" {
		t.Fatalf("tools = %+v", tools)
	}
	if res := mustCall(t, m, "mcp__remote__echo", `{"text":"over http"}`); res.Text() != "http echo: over http" {
		t.Errorf("echo = %+v", res)
	}
	for _, tr := range seen() {
		if !strings.HasSuffix(tr, " yes") {
			t.Errorf("request without the configured header: %q", tr)
		}
	}
	m.Close()
	if st := statusOf(t, m, "remote"); st.State != StateStopped {
		t.Errorf("status after Close = %+v", st)
	}
}

func TestStreamableHTTPRejected(t *testing.T) {
	url, _ := newHTTPServer(t, "right")
	m := newTestManager(t, map[string]ServerConfig{
		"remote": {URL: url, Headers: map[string]string{"Authorization": "Bearer wrong"}},
	}, "")
	startReady(t, m)
	st := statusOf(t, m, "remote")
	if st.State != StateFailed || st.Restarts != m.opts.maxFailures-1 {
		t.Fatalf("status = %+v, want failed after retries", st)
	}
	wantContains(t, "error", st.Error, "Unauthorized")
	t.Logf("error: %s", st.Error)
}

func TestStreamableHTTPSessionLostReconnects(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "httptest", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "echo"},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	newHandler := func() http.Handler {
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	}
	var (
		mu      sync.Mutex
		handler = newHandler()
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := handler
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	m := newTestManager(t, map[string]ServerConfig{"remote": {URL: ts.URL}}, "")
	startReady(t, m)
	mustCall(t, m, "mcp__remote__echo", `{"text":"one"}`)

	// The server restarts and forgets every session.
	mu.Lock()
	handler = newHandler()
	mu.Unlock()

	_, err := m.Call(context.Background(), "mcp__remote__echo", []byte(`{"text":"two"}`))
	if err == nil {
		t.Fatal("a call on a forgotten session succeeded")
	}
	t.Logf("call error: %v", err)
	waitStatus(t, m, "remote", func(st ServerStatus) bool { return st.State == StateReady && st.Restarts == 1 })
	if res := mustCall(t, m, "mcp__remote__echo", `{"text":"three"}`); res.Text() != "three" {
		t.Errorf("echo after reconnect = %+v", res)
	}
}
