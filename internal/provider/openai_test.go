package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

func TestOpenAIText(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_text.sse"))
	cfg := srv.Config()
	cfg.Headers = map[string]string{"X-Title": "Loop"}
	var rec recorder
	msg, err := provider.NewOpenAI(cfg).Stream(context.Background(), provider.Request{
		Model: "gpt-5", System: "Be brief.", Messages: []convo.Message{user("Hi")},
	}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[{"type":"text","text":"Hello, world! How can I help?"}]`)
	if got := rec.joined(provider.DeltaText, 0); got != "Hello, world! How can I help?" {
		t.Errorf("text deltas = %q", got)
	}
	if rec.count(provider.DeltaText) != 6 {
		t.Errorf("want one delta per chunk (6), got %d", rec.count(provider.DeltaText))
	}
	if msg.Role != convo.RoleAssistant || msg.StopReason != convo.StopEnd || msg.Provider != "test" || msg.Model != "gpt-5" {
		t.Errorf("role/stop/provider/model = %q %q %q %q", msg.Role, msg.StopReason, msg.Provider, msg.Model)
	}
	want := convo.Usage{Input: 226, Output: 28, CacheRead: 1024, TotalTokens: 1278}
	if msg.Usage == nil || *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+providertest.TestKey {
		t.Errorf("Authorization = %q", got)
	}
	if r.Header.Get("X-Title") != "Loop" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", r.Header)
	}
	assertJSON(t, r.Body, `{
		"model": "gpt-5",
		"messages": [{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],
		"stream": true,
		"stream_options": {"include_usage": true}
	}`)
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
	cfg := srv.Config()
	cfg.APIKey = ""
	if _, err := provider.NewOpenAI(cfg).Stream(context.Background(), provider.Request{Model: "qwen3", Messages: []convo.Message{user("Hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header; h.Get("Authorization") != "" {
		t.Errorf("Authorization sent without a key: %q", h.Get("Authorization"))
	}
}

func TestOpenAIThinking(t *testing.T) {
	for _, tc := range []struct{ fixture, thinking, text string }{
		{"openai_thinking.sse", "The user asks for 2+2. That is 4.", "2 + 2 = 4."}, // DeepSeek reasoning_content, keep-alive comments
		{"openai_openrouter.sse", "Short question; answer briefly.", "Paris."},     // OpenRouter reasoning, CRLF
		{"openai_ollama_tools.sse", "I should list the files.", ""},                // Ollama reasoning
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			srv := providertest.NewOpenAIServer(t, fixture(t, tc.fixture))
			var rec recorder
			msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, rec.on)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Content[0].Type != convo.BlockThinking || msg.Content[0].Text != tc.thinking {
				t.Errorf("first block = %+v", msg.Content[0])
			}
			if rec.joined(provider.DeltaThinking, 0) != tc.thinking {
				t.Errorf("thinking deltas = %q", rec.joined(provider.DeltaThinking, 0))
			}
			if tc.text != "" {
				if len(msg.Content) != 2 || msg.Content[1].Text != tc.text || rec.joined(provider.DeltaText, 1) != tc.text {
					t.Errorf("content = %+v", msg.Content)
				}
			}
		})
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_tools.sse"))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "gpt-5", Messages: []convo.Message{user("find main")}}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[
		{"type":"text","text":"Let me look at both."},
		{"type":"toolCall","id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"read","arguments":{"path":"cmd/loop/main.go"}},
		{"type":"toolCall","id":"call_Q2nV8kXw1LrT6yHb0JmZs4Pe","name":"grep","arguments":{"pattern":"func main\\(","path":".","limit":5}}
	]`)
	if msg.StopReason != convo.StopToolUse {
		t.Errorf("stop = %q", msg.StopReason)
	}
	var starts []provider.Delta
	for _, d := range rec.deltas {
		if d.Kind == provider.DeltaToolCall {
			starts = append(starts, d)
		}
	}
	if len(starts) != 2 || starts[0].Block != 1 || starts[0].ToolName != "read" || starts[0].ToolCallID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" ||
		starts[1].Block != 2 || starts[1].ToolName != "grep" {
		t.Errorf("toolCall deltas = %+v", starts)
	}
	if got := rec.joined(provider.DeltaToolArgs, 1); got != `{"path":"cmd/loop/main.go"}` {
		t.Errorf("args deltas of block 1 = %q", got)
	}
	if rec.count(provider.DeltaToolArgs) != 11 {
		t.Errorf("want one toolArgs delta per fragment (11), got %d", rec.count(provider.DeltaToolArgs))
	}
}

func TestOpenAIToolCallEndedWithStop(t *testing.T) {
	// Ollama sends a whole call in one chunk and finishes with "stop".
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_ollama_tools.sse"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "qwen3:8b", Messages: []convo.Message{user("ls")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != convo.StopToolUse {
		t.Errorf("stop = %q", msg.StopReason)
	}
	assertBlocks(t, msg.Content[1:], `[{"type":"toolCall","id":"call_x7f3k2","name":"ls","arguments":{"path":"."}}]`)
	if msg.Usage == nil || *msg.Usage != (convo.Usage{}) {
		t.Errorf("usage without a usage chunk = %+v", msg.Usage)
	}
}

func TestOpenAILength(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_length.sse"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != convo.StopLength || msg.Text() != "The answer is long and" {
		t.Errorf("stop %q text %q", msg.StopReason, msg.Text())
	}
}

func TestOpenAITruncated(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_truncated.sse"))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, rec.on)
	if !errors.Is(err, provider.ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindTruncated {
		t.Errorf("err = %#v", err)
	}
	if msg.Text() != "Hello, wor" || rec.joined(provider.DeltaText, 0) != "Hello, wor" {
		t.Errorf("partial text = %q", msg.Text())
	}
	if msg.StopReason != convo.StopError || msg.ErrorMessage == "" {
		t.Errorf("stop %q error %q", msg.StopReason, msg.ErrorMessage)
	}
}

func TestOpenAITruncatedToolCallStaysSerializable(t *testing.T) {
	full := providertest.OpenAIToolCall("call_1", "read", `{"path":"a.txt"}`)
	cut := full[:strings.Index(full, `"finish_reason":"tool_calls"`)]
	cut = cut[:strings.LastIndex(cut, "\n\n")+2]
	srv := providertest.NewOpenAIServer(t, strings.Replace(cut, `"a.txt\"}`, `"a.`, 1))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if !errors.Is(err, provider.ErrTruncated) {
		t.Fatalf("err = %v", err)
	}
	if _, err := json.Marshal(msg); err != nil {
		t.Fatalf("partial message does not serialize: %v", err)
	}
	// Cut-off arguments are kept as a JSON string.
	assertBlocks(t, msg.Content, `[{"type":"toolCall","id":"call_1","name":"read","arguments":"{\"path\":\"a."}]`)
}

func TestOpenAIFinishWithoutDone(t *testing.T) {
	body := providertest.OpenAIText("fine")
	body = strings.TrimSuffix(body, "data: [DONE]\n\n")
	srv := providertest.NewOpenAIServer(t, body)
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if err != nil || msg.Text() != "fine" || msg.StopReason != convo.StopEnd {
		t.Fatalf("msg %q stop %q err %v", msg.Text(), msg.StopReason, err)
	}
}

func TestOpenAIErrorInsideStream(t *testing.T) {
	body := providertest.OpenAIText("par")
	body = body[:strings.Index(body, "\n\n")+2] + `data: {"error":{"message":"Provider returned error","code":502}}` + "\n\n"
	srv := providertest.NewOpenAIServer(t, body)
	_, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindProvider || perr.Message != "Provider returned error" {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIRequestMapping(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
	history := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{
			{Type: convo.BlockText, Text: "What is in this picture?"},
			{Type: convo.BlockImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
		}},
		{Role: convo.RoleAssistant, Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "hidden reasoning", Signature: "sig"},
			{Type: convo.BlockText, Text: "A cat. Let me check the file."},
			{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"cat.txt"}`)},
			{Type: convo.BlockToolCall, ID: "call_2", Name: "screenshot", Arguments: json.RawMessage(`{}`)},
		}, StopReason: convo.StopToolUse},
		{Role: convo.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "meow"}}},
		{Role: convo.RoleToolResult, ToolCallID: "call_2", ToolName: "screenshot", Content: []convo.Block{
			{Type: convo.BlockText, Text: "screen:"},
			{Type: convo.BlockImage, Data: "R0lGODlh", MimeType: "image/gif"},
		}},
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockText, Text: "It says meow."}}},
		{Role: convo.RoleUser, Content: []convo.Block{
			{Type: convo.BlockText, Text: "Thanks"},
			{Type: convo.BlockText, Text: "[file a.txt]", Attachment: "a.txt"},
		}},
	}
	_, err := srv.Provider().Stream(context.Background(), provider.Request{
		Model: "gpt-5", System: "sys", Messages: history, MaxOutputTokens: 4096, Effort: provider.EffortHigh,
		Tools: []provider.Tool{
			{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "screenshot", Description: "Take a screenshot"},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, srv.Requests()[0].Body, `{
		"model": "gpt-5",
		"stream": true,
		"stream_options": {"include_usage": true},
		"max_completion_tokens": 4096,
		"reasoning_effort": "high",
		"messages": [
			{"role":"system","content":"sys"},
			{"role":"user","content":[
				{"type":"text","text":"What is in this picture?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
			{"role":"assistant","content":"A cat. Let me check the file.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"cat.txt\"}"}},
				{"id":"call_2","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"meow"},
			{"role":"tool","tool_call_id":"call_2","content":"screen:"},
			{"role":"user","content":[
				{"type":"text","text":"Images returned by the tool calls above:"},
				{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlh"}}]},
			{"role":"assistant","content":"It says meow."},
			{"role":"user","content":"Thanks\n\n[file a.txt]"}
		],
		"tools": [
			{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
			{"type":"function","function":{"name":"screenshot","description":"Take a screenshot","parameters":{"type":"object","properties":{}}}}
		]
	}`)
}

func TestOpenAIRepairsHistory(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
	history := []convo.Message{
		// A result whose call was compacted away.
		{Role: convo.RoleToolResult, ToolCallID: "gone", ToolName: "bash", Content: []convo.Block{{Type: convo.BlockText, Text: "done"}}},
		user("go on"),
		// A run stopped between a call and its result.
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "call_9", Name: "bash", Arguments: json.RawMessage(`{"command":"make"}`)}}, StopReason: convo.StopAborted},
		{Role: convo.RoleAssistant, StopReason: convo.StopError}, // nothing streamed
		user("again"),
	}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: history}, nil); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, field(t, srv.Requests()[0].Body, "messages"), `[
		{"role":"user","content":"Result of tool bash:\n\ndone"},
		{"role":"user","content":"go on"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"bash","arguments":"{\"command\":\"make\"}"}}]},
		{"role":"tool","tool_call_id":"call_9","content":"The tool call was not executed."},
		{"role":"user","content":"again"}
	]`)
}

func TestOpenAIEffort(t *testing.T) {
	for effort, want := range map[string]string{
		"": "", provider.EffortDefault: "", provider.EffortOff: `"none"`, provider.EffortMinimal: `"minimal"`,
		provider.EffortLow: `"low"`, provider.EffortMedium: `"medium"`, provider.EffortHigh: `"high"`,
		provider.EffortXHigh: `"xhigh"`, provider.EffortMax: `"xhigh"`,
	} {
		srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
		if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Effort: effort, Messages: []convo.Message{user("q")}}, nil); err != nil {
			t.Fatal(err)
		}
		body := srv.Requests()[0].Body
		if got := string(field(t, body, "reasoning_effort")); got != want {
			t.Errorf("effort %q: reasoning_effort = %s, want %s", effort, got, want)
		}
		if field(t, body, "max_completion_tokens") != nil {
			t.Errorf("max_completion_tokens sent without MaxOutputTokens")
		}
	}
}

// A base URL with a query (Azure OpenAI's api-version, a gateway's key)
// keeps it after the endpoint's path, for both APIs.
func TestBaseURLQueryStaysAfterTheEndpointPath(t *testing.T) {
	for _, tc := range []struct {
		api, base, path string
	}{
		{provider.APIOpenAI, "/openai/deployments/d?api-version=2024-10-21", "/openai/deployments/d/chat/completions"},
		{provider.APIOpenAI, "/v1/?key=abc", "/v1/chat/completions"},
		{provider.APIAnthropic, "/v1?api-version=2", "/v1/messages"},
		{provider.APIAnthropic, "/gw?api-version=2", "/gw/v1/messages"},
	} {
		var srv *providertest.Server
		var p provider.Provider
		if tc.api == provider.APIOpenAI {
			srv = providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
		} else {
			srv = providertest.NewAnthropicServer(t, fixture(t, "anthropic_text.sse"))
		}
		cfg := srv.Config()
		cfg.BaseURL = srv.URL + tc.base
		if tc.api == provider.APIOpenAI {
			p = provider.NewOpenAI(cfg)
		} else {
			p = provider.NewAnthropic(cfg)
		}
		if _, err := p.Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("Hi")}}, nil); err != nil {
			t.Fatalf("%s %s: %v", tc.api, tc.base, err)
		}
		_, query, _ := strings.Cut(tc.base, "?")
		if r := srv.Requests()[0]; r.Path != tc.path || r.Query != query {
			t.Errorf("%s base %s: posted to %s?%s, want %s?%s", tc.api, tc.base, r.Path, r.Query, tc.path, query)
		}
	}
}
