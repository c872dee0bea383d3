package acp_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// ACP frames keep <, > and & as they are: session updates, replies and
// error replies.
func TestACPFramesDoNotEscapeHTML(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"<i>ok</i>"},{"text":" & done"}]}]}`)
	lc := h.connectLines()
	lc.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lc.call("session/new", `{"cwd":"`+h.work+`","mcpServers":[]}`)), &created); err != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	_, lines := lc.reply(lc.send("session/prompt", `{"sessionId":"`+created.Result.SessionID+`","prompt":[{"type":"text","text":"<b>&</b>"}]}`))
	lines = append(lines, lc.call("session/prompt", `{"sessionId":"<no&such>","prompt":[{"type":"text","text":"x"}]}`))
	all := strings.Join(lines, "")
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if strings.Contains(all, esc) {
			t.Errorf("a frame holds %s:\n%s", esc, all)
		}
	}
	for _, want := range []string{`<i>ok</i>`, ` & done`, `<no&such>`, `"stopReason":"end_turn"`} {
		if !strings.Contains(all, want) {
			t.Errorf("no frame holds %s:\n%s", want, all)
		}
	}
}
