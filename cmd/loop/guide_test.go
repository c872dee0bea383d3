package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPasteGuideFillsInTheIdsTheRepliesCarry: the hint after session/new
// names the new session, the answer to an approval carries the server's
// request id, and output written in pieces is followed as whole lines.
func TestPasteGuideFillsInTheIdsTheRepliesCarry(t *testing.T) {
	var out, hint bytes.Buffer
	g := newPasteGuide(&out, &hint)
	frames := `{"id":1,"result":{"capabilities":{},"protocolVersion":"loop/1"},"jsonrpc":"2.0"}
{"id":2,"result":{"sessionId":"s-1","workspaceId":null},"jsonrpc":"2.0"}
{"jsonrpc":"2.0","id":"approval-a1","method":"session/request_approval","params":{"sessionId":"s-1"}}
{"jsonrpc":"2.0","method":"session/agent_settled","params":{"sessionId":"s-1","outcome":"completed"}}
`
	for i := 0; i < len(frames); i += 7 {
		if _, err := g.Write([]byte(frames[i:min(i+7, len(frames))])); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != frames {
		t.Fatalf("stdout changed: %q", out.String())
	}
	for _, want := range []string{
		`"method":"session/new"`,
		`"method":"session/prompt","params":{"sessionId":"s-1",`,
		`{"jsonrpc":"2.0","id":"approval-a1","result":{"decision":"allowed-once"}}`,
		`"method":"session/get","params":{"sessionId":"s-1"}`,
	} {
		if !strings.Contains(hint.String(), want) {
			t.Errorf("no hint with %s in:\n%s", want, hint.String())
		}
	}
}

// TestPasteGuidePassesOverALineTooLongToFollow: a long line (a snapshot
// with a whole history) is written through but not kept.
func TestPasteGuidePassesOverALineTooLongToFollow(t *testing.T) {
	var out, hint bytes.Buffer
	g := newPasteGuide(&out, &hint)
	long := `{"id":1,"result":{"protocolVersion":"loop/1","pad":"` + strings.Repeat("x", 2*maxGuidedLine) + "\"}}\n"
	for i := 0; i < len(long); i += 4096 {
		g.Write([]byte(long[i:min(i+4096, len(long))]))
	}
	if out.Len() != len(long) || hint.Len() != 0 || cap(g.line) > 2*maxGuidedLine {
		t.Fatalf("out %d of %d bytes, hint %q, kept %d", out.Len(), len(long), hint.String(), cap(g.line))
	}
	g.Write([]byte(`{"id":1,"result":{"protocolVersion":"loop/1"}}` + "\n"))
	if !strings.Contains(hint.String(), "session/new") {
		t.Fatalf("the line after a long one is not followed: %q", hint.String())
	}
}
