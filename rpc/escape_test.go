package rpc_test

import (
	"fmt"
	"strings"
	"testing"
)

// Frames keep <, > and & as they are: notifications and results that
// jsonrpc2 marshals, merged deltas, and error replies.
func TestWireFramesDoNotEscapeHTML(t *testing.T) {
	c := startServer(t, `{"turns":[{"steps":[{"text":"<i>ok</i>"},{"text":" & done"}]}]}`)
	sid := c.newSession()
	var lines []string
	pid := c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": "r<1>", "text": "<b>&</b>",
		"files": []map[string]any{{"name": "a.html", "text": "<p>&amp;</p>"}}})
	// The prompt's reply and the run's settlement, in either order (a short
	// run may settle before the reply is written, docs/protocol.md 2.4):
	// stopping at the settlement alone could leave the reply to the
	// readUntil below, which passes over it.
	for reply, settled := false, false; !reply || !settled; {
		line := c.readUntil("")
		lines = append(lines, line)
		reply = reply || strings.Contains(line, fmt.Sprintf(`"id":%d,`, pid))
		settled = settled || strings.Contains(line, "session/agent_settled")
	}
	gid := c.send("session/get", map[string]any{"sessionId": sid})
	lines = append(lines, c.readUntil(fmt.Sprintf(`"id":%d,`, gid)))
	eid := c.send("session/get", map[string]any{"sessionId": "<no&such>"})
	lines = append(lines, c.readUntil(fmt.Sprintf(`"id":%d,`, eid)))
	all := strings.Join(lines, "")
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if strings.Contains(all, esc) {
			t.Errorf("a frame holds %s:\n%s", esc, all)
		}
	}
	for _, want := range []string{
		fmt.Sprintf(`"id":%d,`, pid), `"requestId":"r<1>"`, `"text":"<b>&</b>"`,
		`{\"name\":\"a.html\",\"text\":\"<p>&amp;</p>\"}`, `<i>ok</i>`, ` & done`, `<no&such>`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no frame holds %s:\n%s", want, all)
		}
	}
}
