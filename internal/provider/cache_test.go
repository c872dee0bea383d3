package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// A step that adds more blocks than the API looks back from a breakpoint
// (about 20) still reads the prefix the previous request wrote at its last
// block: besides the system prompt's and the last block's, breakpoints sit
// 19 and 38 blocks before the end, four in all.
func TestAnthropicBreakpointsReachBackPastALongStep(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.AnthropicText("ok"))
	hist := []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "go"}}}}
	var calls []convo.Block
	for i := range 30 {
		calls = append(calls, convo.Block{Type: convo.BlockToolCall, ID: fmt.Sprintf("c%d", i), Name: "ls", Arguments: json.RawMessage(`{}`)})
	}
	hist = append(hist, convo.Message{Role: convo.RoleAssistant, Content: calls, StopReason: convo.StopToolUse})
	for i := range 30 {
		hist = append(hist, convo.Message{Role: convo.RoleToolResult, ToolCallID: fmt.Sprintf("c%d", i), ToolName: "ls", Content: []convo.Block{{Type: convo.BlockText, Text: "x"}}})
	}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", System: "sys", Messages: hist}, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		System   []map[string]any `json:"system"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	srv.Requests()[0].Decode(t, &body)
	var marked []int
	n := 0
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if b["cache_control"] != nil {
				marked = append(marked, n)
			}
			n++
		}
	}
	if body.System[0]["cache_control"] == nil {
		t.Error("the system prompt is not a breakpoint")
	}
	// 61 blocks: the prompt, 30 calls, 30 results.
	if want := []int{60 - 38, 60 - 19, 60}; fmt.Sprint(marked) != fmt.Sprint(want) {
		t.Fatalf("breakpoints at blocks %v, want %v", marked, want)
	}
}

// Every request of a session names it in prompt_cache_key, so that
// OpenAI routes them to the servers that hold their prefix.
func TestOpenAIRequestCarriesThePromptCacheKey(t *testing.T) {
	t.Run("chat-completions", func(t *testing.T) {
		testPromptCacheKey(t, providertest.NewOpenAIServer(t, providertest.OpenAIText("ok")))
	})
	t.Run("responses", func(t *testing.T) {
		testPromptCacheKey(t, providertest.NewResponsesServer(t, providertest.ResponsesText("ok")))
	})
}

func testPromptCacheKey(t *testing.T, srv *providertest.Server) {
	msgs := []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "hi"}}}}
	if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: msgs, CacheKey: "session-1"}, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Key string `json:"prompt_cache_key"`
	}
	srv.Requests()[0].Decode(t, &body)
	if body.Key != "session-1" {
		t.Fatalf("prompt_cache_key %q", body.Key)
	}
}
