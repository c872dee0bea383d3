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

func TestResponsesStreamsText(t *testing.T) {
	srv := providertest.NewResponsesServer(t, providertest.ResponsesText("Hello, ", "world."))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{
		Model: "gpt-5.1", System: "Be brief.", Messages: []convo.Message{user("Hi")},
	}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[{"type":"text","text":"Hello, world."}]`)
	if got := rec.joined(provider.DeltaText, 0); got != "Hello, world." || rec.count(provider.DeltaText) != 2 {
		t.Errorf("text deltas = %q (%d)", got, rec.count(provider.DeltaText))
	}
	if msg.StopReason != convo.StopEnd || msg.Provider != "test" || msg.Model != "gpt-5.1" {
		t.Errorf("stop/provider/model = %q %q %q", msg.StopReason, msg.Provider, msg.Model)
	}
	r := srv.Requests()[0]
	if r.Method != "POST" || r.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer "+providertest.TestKey {
		t.Errorf("request %s %s auth %q", r.Method, r.Path, r.Header.Get("Authorization"))
	}
	assertJSON(t, r.Body, `{
		"model": "gpt-5.1",
		"instructions": "Be brief.",
		"input": [{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]}],
		"parallel_tool_calls": true,
		"store": false,
		"stream": true,
		"include": ["reasoning.encrypted_content"]
	}`)
}

// TestResponsesKeepsReasoningItemsAndParallelCalls: a reply with a
// reasoning item (two summary parts), text and two interleaved calls
// becomes a thinking block carrying the item's id and encrypted content,
// a text block and two tool calls, with the cached input in CacheRead.
func TestResponsesKeepsReasoningItemsAndParallelCalls(t *testing.T) {
	srv := providertest.NewResponsesServer(t, fixture(t, "responses_reasoning_tools.sse"))
	var rec recorder
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "gpt-5.1-codex", Messages: []convo.Message{user("Read a.go and b.go")}}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[
		{"type":"thinking","text":"**Reading both files**\n\nI will read a.go and b.go.","signature":"gAAAAABpLwE1-full-ciphertext==","id":"rs_0a1"},
		{"type":"text","text":"Reading both."},
		{"type":"toolCall","id":"call_A1","name":"read","arguments":{"path":"a.go"}},
		{"type":"toolCall","id":"call_B2","name":"read","arguments":{"path":"b.go"}}
	]`)
	if msg.StopReason != convo.StopToolUse {
		t.Errorf("stop = %q", msg.StopReason)
	}
	want := convo.Usage{Input: 1024, Output: 310, CacheRead: 4096, TotalTokens: 5430}
	if msg.Usage == nil || *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	if got := rec.joined(provider.DeltaThinking, 0); got != "**Reading both files**\n\nI will read a.go and b.go." {
		t.Errorf("thinking deltas = %q", got)
	}
	if rec.count(provider.DeltaToolCall) != 2 || rec.joined(provider.DeltaToolArgs, 2) != `{"path":"a.go"}` || rec.joined(provider.DeltaToolArgs, 3) != `{"path":"b.go"}` {
		t.Errorf("tool deltas = %+v", rec.deltas)
	}
}

// TestResponsesRequestCarriesHistoryToolsImagesAndEffort: the request
// maps tools, effort, images (the user's and a tool's), and an assistant
// turn's reasoning item, text and calls to input items in their order,
// followed by the calls' outputs. Thinking of another API is not sent, nor
// reasoning that no output followed (a reply stopped after it), nor
// another model's reasoning.
func TestResponsesRequestCarriesHistoryToolsImagesAndEffort(t *testing.T) {
	srv := providertest.NewResponsesServer(t, providertest.ResponsesText("ok"))
	history := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "What is this?"}, {Type: convo.BlockImage, Data: "iVBORw0K", MimeType: "image/png"}}},
		{Role: convo.RoleAssistant, Model: "gpt-5.1-codex", Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "Anthropic thinking", Signature: "sig-anthropic"},
			{Type: convo.BlockThinking, Text: "Look closer.", ID: "rs_1", Signature: "enc-1"},
			{Type: convo.BlockText, Text: "Let me look."},
			{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"x.png"}`)},
			{Type: convo.BlockThinking, ID: "rs_2", Signature: "enc-2"},
			{Type: convo.BlockToolCall, ID: "call_2", Name: "bash", Arguments: json.RawMessage(`"not json"`)},
		}, StopReason: convo.StopToolUse},
		{Role: convo.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "an image"}, {Type: convo.BlockImage, Data: "R0lGOD", MimeType: "image/gif"}}},
		{Role: convo.RoleToolResult, ToolCallID: "call_2", ToolName: "bash", IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: "bad arguments"}}},
		{Role: convo.RoleAssistant, Model: "gpt-5.1-codex", StopReason: convo.StopAborted, Content: []convo.Block{{Type: convo.BlockThinking, Text: "Stopped here.", ID: "rs_3", Signature: "enc-3"}}},
		user("Go on."),
		{Role: convo.RoleAssistant, Model: "gpt-5-mini", Content: []convo.Block{{Type: convo.BlockThinking, Text: "Other model.", ID: "rs_4", Signature: "enc-4"}, {Type: convo.BlockText, Text: "Going."}}},
		user("And?"),
	}
	_, err := srv.Provider().Stream(context.Background(), provider.Request{
		Model: "gpt-5.1-codex", Messages: history, Effort: provider.EffortMax, MaxOutputTokens: 4000,
		Tools: []provider.Tool{{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, {Name: "bash"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, srv.Requests()[0].Body, `{
		"model": "gpt-5.1-codex",
		"input": [
			{"type":"message","role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0K"}]},
			{"type":"reasoning","summary":[{"type":"summary_text","text":"Look closer."}],"encrypted_content":"enc-1"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},
			{"type":"function_call","call_id":"call_1","name":"read","arguments":"{\"path\":\"x.png\"}"},
			{"type":"reasoning","summary":[],"encrypted_content":"enc-2"},
			{"type":"function_call","call_id":"call_2","name":"bash","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"an image"},
			{"type":"function_call_output","call_id":"call_2","output":"bad arguments"},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Images returned by the tool calls above:"},{"type":"input_image","image_url":"data:image/gif;base64,R0lGOD"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Go on."}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Going."}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"And?"}]}
		],
		"tools": [
			{"type":"function","name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"strict":false},
			{"type":"function","name":"bash","parameters":{"type":"object","properties":{}},"strict":false}
		],
		"tool_choice": "auto",
		"parallel_tool_calls": true,
		"reasoning": {"effort":"xhigh","summary":"auto"},
		"store": false,
		"stream": true,
		"include": ["reasoning.encrypted_content"],
		"max_output_tokens": 4000
	}`)
}

// TestResponsesReasoningItemRoundTrips: the reasoning item a reply
// brought goes back, as it came, in the next request.
func TestResponsesReasoningItemRoundTrips(t *testing.T) {
	srv := providertest.NewResponsesServer(t, fixture(t, "responses_reasoning_tools.sse"), providertest.ResponsesText("Done."))
	p := srv.Provider()
	history := []convo.Message{user("Read a.go and b.go")}
	reply, err := p.Stream(context.Background(), provider.Request{Model: "m", Messages: history}, nil)
	if err != nil {
		t.Fatal(err)
	}
	history = append(history, reply,
		convo.Message{Role: convo.RoleToolResult, ToolCallID: "call_A1", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "package a"}}},
		convo.Message{Role: convo.RoleToolResult, ToolCallID: "call_B2", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "package b"}}})
	if _, err := p.Stream(context.Background(), provider.Request{Model: "m", Messages: history}, nil); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, field(t, srv.Requests()[1].Body, "input"), `[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"Read a.go and b.go"}]},
		{"type":"reasoning","summary":[{"type":"summary_text","text":"**Reading both files**\n\nI will read a.go and b.go."}],"encrypted_content":"gAAAAABpLwE1-full-ciphertext=="},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading both."}]},
		{"type":"function_call","call_id":"call_A1","name":"read","arguments":"{\"path\":\"a.go\"}"},
		{"type":"function_call","call_id":"call_B2","name":"read","arguments":"{\"path\":\"b.go\"}"},
		{"type":"function_call_output","call_id":"call_A1","output":"package a"},
		{"type":"function_call_output","call_id":"call_B2","output":"package b"}
	]`)
}

// TestAnthropicDropsResponsesReasoningItems: a session that goes on with
// Anthropic does not send OpenAI's encrypted reasoning as a signature.
func TestAnthropicDropsResponsesReasoningItems(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
	history := []convo.Message{user("Hi"), {Role: convo.RoleAssistant, Content: []convo.Block{
		{Type: convo.BlockThinking, Text: "summary", ID: "rs_1", Signature: "enc-1"}, {Type: convo.BlockText, Text: "Hello."}}}, user("Again")}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: history}, nil); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[0].Body); strings.Contains(body, "enc-1") || strings.Contains(body, `"thinking"`) {
		t.Errorf("reasoning item sent to Anthropic: %s", body)
	}
}

func TestResponsesIncompleteAtMaxOutputTokensIsLength(t *testing.T) {
	body := strings.Replace(providertest.ResponsesText("cut"), "response.completed", "response.incomplete", 2)
	body = strings.Replace(body, `"status":"completed","model"`, `"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model"`, 1)
	srv := providertest.NewResponsesServer(t, body)
	msg, err := srv.Provider().Stream(context.Background(), hi, nil)
	if err != nil || msg.StopReason != convo.StopLength || msg.Text() != "cut" {
		t.Fatalf("stop %q text %q err %v", msg.StopReason, msg.Text(), err)
	}
}

func TestResponsesStreamErrors(t *testing.T) {
	text := providertest.ResponsesText("partial")
	cut := text[:strings.Index(text, "event: response.completed")]
	for _, tc := range []struct {
		name, body, msg string
		truncated       bool
	}{
		{"failed", providertest.ResponsesEvent(0, "response.created", `"response":{"id":"r","status":"in_progress"}`) +
			providertest.ResponsesEvent(1, "response.failed", `"response":{"id":"r","status":"failed","error":{"code":"invalid_prompt","message":"The prompt was flagged."}}`),
			"model provider error: invalid_prompt: The prompt was flagged.", false},
		{"error event", providertest.ResponsesEvent(0, "error", `"code":"invalid_request_error","message":"Unknown parameter.","param":"x"`),
			"model provider error: invalid_request_error: Unknown parameter.", false},
		{"cut before response.completed", cut, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewResponsesServer(t, tc.body)
			msg, err := srv.Provider().Stream(context.Background(), hi, nil)
			if err == nil || msg.StopReason != convo.StopError {
				t.Fatalf("stop %q err %v", msg.StopReason, err)
			}
			if tc.truncated != errors.Is(err, provider.ErrTruncated) || (tc.msg != "" && err.Error() != tc.msg) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestResponsesRetriesRateLimitsAndServerErrors: 429 and 5xx statuses,
// and a rate-limit failure event before any output, are retried as with
// the other APIs.
func TestResponsesRetriesRateLimitsAndServerErrors(t *testing.T) {
	for _, first := range []providertest.Response{
		{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
		{Status: 500, Body: `{"error":{"message":"The server had an error","type":"server_error"}}`},
		{Status: 503, Body: `{"error":{"message":"overloaded"}}`},
		providertest.SSE(providertest.ResponsesEvent(0, "response.created", `"response":{"id":"r","status":"in_progress"}`) +
			providertest.ResponsesEvent(1, "response.failed", `"response":{"id":"r","status":"failed","error":{"code":"rate_limit_exceeded","message":"Slow down."},"usage":{"input_tokens":7,"output_tokens":0,"total_tokens":7}}`)),
	} {
		srv := providertest.NewServer(t, provider.APIOpenAIResponses, first, providertest.SSE(providertest.ResponsesText("fine")))
		var attempts []convo.Usage
		req := hi
		req.AttemptUsage = func(u convo.Usage) { attempts = append(attempts, u) }
		msg, err := retrying(srv, 2).Stream(context.Background(), req, nil)
		if err != nil || msg.Text() != "fine" || len(srv.Requests()) != 2 {
			t.Errorf("first %d: text %q err %v requests %d", first.Status, msg.Text(), err, len(srv.Requests()))
		}
		if first.Status == 0 && (len(attempts) != 1 || attempts[0].Input != 7) {
			t.Errorf("failed attempt's usage = %+v", attempts)
		}
	}
}

// TestResponsesEffortIsReasoningEffort: "default" sends no reasoning
// member, "off" asks for none (and no summary), "max" for the highest.
func TestResponsesEffortIsReasoningEffort(t *testing.T) {
	for effort, want := range map[string]string{
		provider.EffortDefault: "",
		provider.EffortOff:     `{"effort":"none"}`,
		provider.EffortLow:     `{"effort":"low","summary":"auto"}`,
		provider.EffortMax:     `{"effort":"xhigh","summary":"auto"}`,
	} {
		srv := providertest.NewResponsesServer(t, providertest.ResponsesText("ok"))
		req := hi
		req.Effort = effort
		if _, err := srv.Provider().Stream(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := string(field(t, srv.Requests()[0].Body, "reasoning")); got != want {
			t.Errorf("effort %q: reasoning %s, want %s", effort, got, want)
		}
	}
}
