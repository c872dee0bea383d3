package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

func TestAnthropicText(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_text.sse"))
	cfg := srv.Config()
	cfg.Headers = map[string]string{"anthropic-beta": "test-beta"}
	var rec recorder
	msg, err := provider.NewAnthropic(cfg).Stream(context.Background(), provider.Request{
		Model: "claude-sonnet-4-5", System: "Be brief.", Messages: []convo.Message{user("Hi")},
	}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[{"type":"text","text":"Hello, world! How can I help?"}]`)
	if rec.joined(provider.DeltaText, 0) != "Hello, world! How can I help?" || rec.count(provider.DeltaText) != 4 {
		t.Errorf("deltas = %+v", rec.deltas)
	}
	if msg.StopReason != convo.StopEnd || msg.Provider != "test" || msg.Model != "claude-sonnet-4-5" {
		t.Errorf("stop/provider/model = %q %q %q", msg.StopReason, msg.Provider, msg.Model)
	}
	if want := (convo.Usage{Input: 25, Output: 15, TotalTokens: 40}); msg.Usage == nil || *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}

	r := srv.Requests()[0]
	if r.Path != "/v1/messages" {
		t.Errorf("path = %s", r.Path)
	}
	if r.Header.Get("x-api-key") != providertest.TestKey || r.Header.Get("anthropic-version") != "2023-06-01" ||
		r.Header.Get("anthropic-beta") != "test-beta" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers = %v", r.Header)
	}
	assertJSON(t, r.Body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 8192,
		"stream": true,
		"system": [{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
		"messages": [{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}]
	}`)
}

func TestAnthropicBaseURL(t *testing.T) {
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
		cfg := srv.Config()
		cfg.BaseURL += suffix
		if _, err := provider.NewAnthropic(cfg).Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil); err != nil {
			t.Fatal(err)
		}
		if p := srv.Requests()[0].Path; p != "/v1/messages" {
			t.Errorf("base URL ending %q: path %s", suffix, p)
		}
	}
}

func TestAnthropicThinking(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_thinking.sse"))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("27*453?")}, Effort: provider.EffortHigh}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[
		{"type":"thinking","text":"The user wants 27 * 453. 27 * 453 = 12231.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
		{"type":"thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
		{"type":"text","text":"27 * 453 = 12,231."}
	]`)
	if rec.joined(provider.DeltaThinking, 0) != msg.Content[0].Text || rec.joined(provider.DeltaText, 2) != "27 * 453 = 12,231." {
		t.Errorf("deltas = %+v", rec.deltas)
	}
	if want := (convo.Usage{Input: 2113, Output: 312, CacheRead: 1800, CacheWrite: 120, TotalTokens: 4345}); *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", *msg.Usage, want)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_tools.sse"))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("read a and b")}}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[
		{"type":"text","text":"I'll check both files."},
		{"type":"toolCall","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read","arguments":{"path":"a.txt"}},
		{"type":"toolCall","id":"toolu_01VmqyTH6PEk8BwK2Vf3xQ8r","name":"read","arguments":{"path":"b.txt","limit":20}},
		{"type":"toolCall","id":"toolu_01NoArgsQ5rT7yU9iO1pA3sD","name":"ls","arguments":{}}
	]`)
	if msg.StopReason != convo.StopToolUse {
		t.Errorf("stop = %q", msg.StopReason)
	}
	if rec.count(provider.DeltaToolCall) != 3 || rec.joined(provider.DeltaToolArgs, 2) != `{"path": "b.txt", "limit": 20}` {
		t.Errorf("deltas = %+v", rec.deltas)
	}
}

func TestAnthropicLength(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_length.sse"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("story")}}, nil)
	if err != nil || msg.StopReason != convo.StopLength || msg.Text() != "Once upon a time" {
		t.Fatalf("stop %q text %q err %v", msg.StopReason, msg.Text(), err)
	}
}

func TestAnthropicTruncated(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_truncated.sse"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if !errors.Is(err, provider.ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if msg.Text() != "Hello, wor" || msg.StopReason != convo.StopError {
		t.Errorf("partial %q stop %q", msg.Text(), msg.StopReason)
	}
}

func TestAnthropicNoMessageStopIsTruncated(t *testing.T) {
	body := providertest.AnthropicText("all", " there")
	body = body[:len(body)-len("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")]
	srv := providertest.NewAnthropicServer(t, body)
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if !errors.Is(err, provider.ErrTruncated) || msg.Text() != "all there" {
		t.Fatalf("err %v text %q", err, msg.Text())
	}
}

func TestAnthropicErrorEvent(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, fixture(t, "anthropic_error.sse"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindProvider || perr.Message != "overloaded_error: Overloaded" || !perr.Retryable {
		t.Fatalf("err = %#v", err)
	}
	if msg.Text() != "Partial" || msg.StopReason != convo.StopError || msg.ErrorMessage != err.Error() {
		t.Errorf("partial %q stop %q errmsg %q", msg.Text(), msg.StopReason, msg.ErrorMessage)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("retried after output: %d requests", len(srv.Requests()))
	}
}

func TestAnthropicRequestMapping(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
	history := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{
			{Type: convo.BlockText, Text: "Look:"},
			{Type: convo.BlockImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
		}},
		{Role: convo.RoleAssistant, Provider: "anthropic", Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "Let me read it.", Signature: "sig-1"},
			{Type: convo.BlockThinking, Data: "redacted-data"},
			{Type: convo.BlockText, Text: "Reading."},
			{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			{Type: convo.BlockToolCall, ID: "fc.2/x", Name: "read", Arguments: json.RawMessage(`"not json"`)},
		}},
		{Role: convo.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "A"}}},
		{Role: convo.RoleToolResult, ToolCallID: "fc.2/x", ToolName: "read", IsError: true, Content: []convo.Block{
			{Type: convo.BlockText, Text: "bad arguments"},
			{Type: convo.BlockImage, Data: "R0lGODlh", MimeType: "image/gif"},
		}},
		{Role: convo.RoleAssistant, Provider: "openai", Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "unsigned, from another provider"},
			{Type: convo.BlockText, Text: "Done."},
		}},
		user("Next"),
	}
	_, err := srv.Provider().Stream(context.Background(), provider.Request{
		Model: "claude", Messages: history, MaxOutputTokens: 32000, Effort: provider.EffortMedium,
		Tools: []provider.Tool{{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, {Name: "ls"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, srv.Requests()[0].Body, `{
		"model": "claude",
		"max_tokens": 32000,
		"stream": true,
		"thinking": {"type":"enabled","budget_tokens":8192},
		"tools": [
			{"name":"read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},
			{"name":"ls","input_schema":{"type":"object","properties":{}}}
		],
		"messages": [
			{"role":"user","content":[
				{"type":"text","text":"Look:"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
			{"role":"assistant","content":[
				{"type":"thinking","thinking":"Let me read it.","signature":"sig-1"},
				{"type":"redacted_thinking","data":"redacted-data"},
				{"type":"text","text":"Reading."},
				{"type":"tool_use","id":"call_1","name":"read","input":{"path":"a.txt"}},
				{"type":"tool_use","id":"fc_2_x","name":"read","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"A"}]},
				{"type":"tool_result","tool_use_id":"fc_2_x","is_error":true,"content":[
					{"type":"text","text":"bad arguments"},
					{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}}]}]},
			{"role":"assistant","content":[{"type":"text","text":"Done."}]},
			{"role":"user","content":[{"type":"text","text":"Next","cache_control":{"type":"ephemeral"}}]}
		]
	}`)
}

func TestAnthropicToolResultsMergeWithFollowingUserText(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
	history := []convo.Message{
		user("run it"),
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "t1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: convo.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Content: []convo.Block{{Type: convo.BlockText, Text: "a b"}}},
		user("and now?"),
	}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: history}, nil); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, field(t, srv.Requests()[0].Body, "messages"), `[
		{"role":"user","content":[{"type":"text","text":"run it"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a b"}]},
			{"type":"text","text":"and now?","cache_control":{"type":"ephemeral"}}]}
	]`)
}

func TestAnthropicEffort(t *testing.T) {
	for _, tc := range []struct {
		effort    string
		maxOutput int
		maxTokens int
		budget    int // 0: no thinking
	}{
		{"", 0, 8192, 0},
		{provider.EffortDefault, 0, 8192, 0},
		{provider.EffortOff, 4000, 4000, 0},
		{provider.EffortMinimal, 0, 1024 + 8192, 1024},
		{provider.EffortLow, 0, 4096 + 8192, 4096},
		{provider.EffortMedium, 0, 8192 + 8192, 8192},
		{provider.EffortHigh, 0, 16384 + 8192, 16384},
		{provider.EffortXHigh, 0, 32000 + 8192, 32000},
		{provider.EffortMax, 0, 64000 + 8192, 64000},
		{provider.EffortHigh, 64000, 64000, 16384},
		{provider.EffortMax, 64000, 64000, 62976}, // the model's limit holds; the budget gives way
		{provider.EffortLow, 1500, 2048, 1024},    // too small for the minimum budget: raised
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.effort, tc.maxOutput), func(t *testing.T) {
			srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
			if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Effort: tc.effort, MaxOutputTokens: tc.maxOutput, Messages: []convo.Message{user("q")}}, nil); err != nil {
				t.Fatal(err)
			}
			var body struct {
				MaxTokens int `json:"max_tokens"`
				Thinking  *struct {
					Type   string `json:"type"`
					Budget int    `json:"budget_tokens"`
				} `json:"thinking"`
			}
			srv.Requests()[0].Decode(t, &body)
			budget := 0
			if body.Thinking != nil {
				budget = body.Thinking.Budget
				if body.Thinking.Type != "enabled" {
					t.Errorf("thinking type %q", body.Thinking.Type)
				}
			}
			if body.MaxTokens != tc.maxTokens || budget != tc.budget {
				t.Errorf("max_tokens %d budget %d, want %d %d", body.MaxTokens, budget, tc.maxTokens, tc.budget)
			}
		})
	}
}

func TestAnthropicNoThinkingMidToolLoopWithoutThinkingBlock(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
	history := []convo.Message{
		user("run it"),
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "t1", Name: "bash", Arguments: json.RawMessage(`{}`)}}},
		{Role: convo.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Content: []convo.Block{{Type: convo.BlockText, Text: "x"}}},
	}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Effort: provider.EffortHigh, Messages: history}, nil); err != nil {
		t.Fatal(err)
	}
	if th := field(t, srv.Requests()[0].Body, "thinking"); th != nil {
		t.Errorf("thinking sent mid tool loop whose assistant message has no thinking block: %s", th)
	}
}
