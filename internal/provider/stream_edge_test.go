package provider_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// A key repeated in an error event inside the stream never reaches the
// error message.
func TestStreamErrorEventNeverShowsTheKey(t *testing.T) {
	for _, tc := range []struct{ api, body string }{
		{provider.APIOpenAI, `data: {"error":{"message":"bad key ` + providertest.TestKey + `"}}` + "\n\n"},
		{provider.APIAnthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"bad key " + providertest.TestKey + "\"}}\n\n"},
	} {
		srv := providertest.NewServer(t, tc.api, providertest.SSE(tc.body))
		_, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("hi")}}, func(provider.Delta) {})
		if err == nil || strings.Contains(err.Error(), providertest.TestKey) {
			t.Errorf("%s: error %v must not hold the key", tc.api, err)
		}
	}
}

// A wait beyond the maximum fails at once; a huge Retry-After used to
// overflow into a negative delay and be retried.
func TestHugeRetryAfterFailsAtOnce(t *testing.T) {
	for _, v := range []string{"99999999999", "1e300", "inf"} {
		srv := providertest.NewServer(t, provider.APIOpenAI,
			providertest.Response{Status: 429, Header: map[string]string{"Retry-After": v}, Body: `{"error":{"message":"slow down"}}`},
			providertest.SSE(providertest.OpenAIText("late")))
		cfg := srv.Config()
		cfg.MaxAttempts = 3
		_, err := provider.NewOpenAI(cfg).Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("hi")}}, func(provider.Delta) {})
		if err == nil || len(srv.Requests()) != 1 {
			t.Errorf("Retry-After %s: err %v after %d requests; want an error after 1", v, err, len(srv.Requests()))
		}
	}
}

// Tool call arguments that are not JSON go back as {}: sent verbatim,
// OpenAI-compatible servers reject the whole request for them.
func TestBrokenToolArgumentsGoBackAsAnEmptyObject(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("ok"))
	broken, _ := json.Marshal(`{"path": "a.t`)
	history := []convo.Message{
		user("read it"),
		{Role: convo.RoleAssistant, StopReason: convo.StopLength, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "c1", Name: "read", Arguments: broken}}},
		{Role: convo.RoleToolResult, ToolCallID: "c1", ToolName: "read", IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: "bad arguments"}}},
	}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: history}, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `"arguments":"{}"`) {
		t.Fatalf("tool call arguments in %s", body)
	}
}

// An overloaded error as the first event of an Anthropic stream, before
// any content, is retried: nothing was shown. After content it is not.
func TestAnthropicOverloadedBeforeContentIsRetried(t *testing.T) {
	overloaded := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv := providertest.NewServer(t, provider.APIAnthropic, providertest.SSE(overloaded), providertest.SSE(providertest.AnthropicText("fine")))
	cfg := srv.Config()
	cfg.MaxAttempts = 3
	msg, err := provider.NewAnthropic(cfg).Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("hi")}}, func(provider.Delta) {})
	if err != nil || msg.Text() != "fine" || len(srv.Requests()) != 2 {
		t.Fatalf("got %q, %v after %d requests", msg.Text(), err, len(srv.Requests()))
	}

	late := strings.TrimSuffix(providertest.AnthropicText("half"), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	late += "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv = providertest.NewServer(t, provider.APIAnthropic, providertest.SSE(late), providertest.SSE(providertest.AnthropicText("again")))
	cfg = srv.Config()
	cfg.MaxAttempts = 3
	_, err = provider.NewAnthropic(cfg).Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("hi")}}, func(provider.Delta) {})
	if err == nil || len(srv.Requests()) != 1 {
		t.Fatalf("an error after content must not be retried: %v after %d requests", err, len(srv.Requests()))
	}
}
