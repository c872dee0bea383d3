package acp_test

import (
	"encoding/json"
	"testing"

	loopacp "github.com/loopdev/loop/rpc/internal/acp"
	"github.com/loopdev/loop/rpc/internal/wire"
)

func chunk(sid, kind, msg, text string) *wire.Outgoing {
	p, _ := json.Marshal(map[string]any{"sessionId": sid, "update": map[string]any{
		"sessionUpdate": kind, "messageId": msg, "content": map[string]any{"type": "text", "text": text},
	}})
	return &wire.Outgoing{Method: "session/update", Notif: true, Params: p}
}

func TestMergeChunks(t *testing.T) {
	prev := chunk("s", "agent_message_chunk", "m1", "Hel")
	for _, next := range []*wire.Outgoing{chunk("s", "agent_message_chunk", "m1", "lo"), chunk("s", "agent_message_chunk", "m1", " ✓")} {
		if !loopacp.MergeChunks(prev, next) {
			t.Fatal("adjacent chunks of one message did not merge")
		}
	}
	for _, other := range []*wire.Outgoing{
		chunk("s", "agent_message_chunk", "m2", "x"), // another message
		chunk("s", "agent_thought_chunk", "m1", "x"), // another kind
		chunk("t", "agent_message_chunk", "m1", "x"), // another session
		{Method: "session/update", Notif: true, Params: json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c"}}`)},
	} {
		if loopacp.MergeChunks(prev, other) {
			t.Fatalf("merged %s", other.Params)
		}
	}
	if err := prev.Finish(prev); err != nil {
		t.Fatal(err)
	}
	var got struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
			MessageID     string `json:"messageId"`
			Content       struct{ Type, Text string }
		} `json:"update"`
	}
	if err := json.Unmarshal(prev.Params, &got); err != nil {
		t.Fatal(err)
	}
	if got.SessionID != "s" || got.Update.SessionUpdate != "agent_message_chunk" || got.Update.MessageID != "m1" ||
		got.Update.Content.Type != "text" || got.Update.Content.Text != "Hello ✓" {
		t.Fatalf("merged: %s", prev.Params)
	}
	// A tool card is never a merge target.
	card := &wire.Outgoing{Method: "session/update", Notif: true, Params: json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"x"}}`)}
	if loopacp.MergeChunks(card, chunk("s", "agent_message_chunk", "m1", "x")) {
		t.Fatal("merged into a tool call")
	}
}
