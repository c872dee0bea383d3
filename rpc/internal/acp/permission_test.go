package acp_test

import (
	"slices"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// callSequence is what the agent sent about tool call id, in order: each
// session/update of its card as kind:status, and each permission request
// about it.
func (f *frameLog) callSequence(id string) []string {
	var out []string
	for _, m := range f.all() {
		p, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "session/update":
			u, _ := p["update"].(map[string]any)
			if u["toolCallId"] != id {
				continue
			}
			s, _ := u["sessionUpdate"].(string)
			if st, ok := u["status"].(string); ok {
				s += ":" + st
			}
			out = append(out, s)
		case "session/request_permission":
			if tc, _ := p["toolCall"].(map[string]any); tc["toolCallId"] == id {
				out = append(out, "request_permission")
			}
		}
	}
	return out
}

const pendingScript = `{"turns":[
 {"match":"one","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"A\n"}}}]},
 {"match":"one","steps":[{"text":"wrote a"}]},
 {"match":"two","steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"b.txt","content":"B\n"}}}]},
 {"match":"two","steps":[{"text":"wrote b"}]},
 {"match":"three","steps":[{"toolCall":{"id":"e1","name":"edit","arguments":{"path":"hello.txt","oldText":"world","newText":"there"}}}]},
 {"match":"three","steps":[{"text":"not edited"}]},
 {"match":"five","steps":[{"toolCall":{"id":"w3","name":"write","arguments":{"path":"c.txt","content":"C\n"}}}]},
 {"match":"five","steps":[{"text":"wrote c"}]}
]}`

// A call that waits for the user's answer stays pending (ACP's
// ToolCallStatus: "the tool call hasn't started running yet because ...
// awaiting approval"): in_progress comes only once the user allowed it, and
// a rejected call goes from pending to failed without ever running.
func TestToolCallAwaitingPermissionStaysPendingUntilTheUserAnswers(t *testing.T) {
	h := newHarness(t, pendingScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}

	c.rec.answer = selectOption("allow_once")
	c.mustPrompt(ns.SessionId, "one")
	want := []string{"tool_call:pending", "request_permission", "tool_call_update:in_progress", "tool_call_update:completed"}
	if got := c.frames.callSequence("w1"); !slices.Equal(got, want) {
		t.Fatalf("allowed call:\n got %q\nwant %q", got, want)
	}

	c.rec.answer = selectOption("reject_once")
	c.mustPrompt(ns.SessionId, "three")
	want = []string{"tool_call:pending", "request_permission", "tool_call_update:failed"}
	if got := c.frames.callSequence("e1"); !slices.Equal(got, want) {
		t.Fatalf("rejected call:\n got %q\nwant %q", got, want)
	}

	c.rec.answer = selectOption("allow_always")
	c.mustPrompt(ns.SessionId, "two")
	want = []string{"tool_call:pending", "request_permission", "tool_call_update:in_progress", "tool_call_update:completed"}
	if got := c.frames.callSequence("w2"); !slices.Equal(got, want) {
		t.Fatalf("call allowed always:\n got %q\nwant %q", got, want)
	}
	// That answer stands for the tool: the next write asks nobody and
	// starts at once.
	c.mustPrompt(ns.SessionId, "five")
	want = []string{"tool_call:pending", "tool_call_update:in_progress", "tool_call_update:completed"}
	if got := c.frames.callSequence("w3"); !slices.Equal(got, want) {
		t.Fatalf("call under a standing allow:\n got %q\nwant %q", got, want)
	}
}
