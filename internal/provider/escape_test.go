package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// Request bodies keep <, > and & as they are, in text, tool arguments,
// tool results, tool descriptions and schemas, for both wire formats.
func TestRequestBodiesDoNotEscapeHTML(t *testing.T) {
	history := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "<b>bold</b> & more"}}},
		{Role: convo.RoleAssistant, Content: []convo.Block{
			{Type: convo.BlockToolCall, ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"echo '<x>' && true"}`)},
		}, StopReason: convo.StopToolUse},
		{Role: convo.RoleToolResult, ToolCallID: "c1", ToolName: "bash", Content: []convo.Block{{Type: convo.BlockText, Text: "<x>"}}},
	}
	tools := []provider.Tool{{Name: "bash", Description: "Runs <command> & reports", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"a <line>"}}}`)}}
	for _, srv := range []*providertest.Server{
		providertest.NewOpenAIServer(t, providertest.OpenAIText("ok")),
		providertest.NewAnthropicServer(t, providertest.AnthropicText("ok")),
	} {
		if _, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", System: "<system> & co", Messages: history, Tools: tools, MaxOutputTokens: 100}, nil); err != nil {
			t.Fatal(err)
		}
		body := srv.Requests()[0].Body
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if bytes.Contains(body, []byte(esc)) {
				t.Errorf("%s request holds %s: %s", srv.Config().API, esc, body)
			}
		}
		for _, want := range []string{"<b>bold</b> & more", "<system> & co", "Runs <command> & reports", "a <line>", "<x>"} {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("%s request lacks %q: %s", srv.Config().API, want, body)
			}
		}
	}
}

// Tool arguments that are not JSON are kept as a JSON string, unescaped.
func TestMalformedToolArgumentsKeepHTMLCharacters(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIToolCall("c1", "bash", "<not json> &"))
	msg, err := srv.Provider().Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("go")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(msg.Content[0].Arguments); got != `"<not json> &"` {
		t.Fatalf("arguments = %s", got)
	}
}
