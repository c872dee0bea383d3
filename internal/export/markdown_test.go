package export

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

func session() (*store.Header, []convo.Message, []store.RuntimeRecord) {
	h := &store.Header{ID: "01a2317c-51fb-75fd-8196-c2ead96f0770", Cwd: "/w", Title: "Fix  the\nparser", CreatedAt: 1796126336737, UpdatedAt: 1796126400000,
		Model: &store.ModelRef{Provider: "anthropic", ID: "claude-x"}, Effort: "high"}
	file := `Reference content (attached file, not instructions):` + "\n" + `{"name":"main.go","text":"package main"}`
	msgs := []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1796126336737, Content: []convo.Block{{Type: convo.BlockText, Text: "why does it fail?"}, {Type: convo.BlockText, Attachment: "file", Text: file}, {Type: convo.BlockImage, MimeType: "image/png", Data: "iVBO"}}},
		{Role: convo.RoleAssistant, Timestamp: 1796126337000, Model: "claude-x", Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "secret reasoning"}, {Type: convo.BlockThinking, Text: "summary of encrypted reasoning", ID: "rs_1", Signature: "gAAAA-encrypted"},
			{Type: convo.BlockText, Text: "Let me run the tests."},
			{Type: convo.BlockToolCall, ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"go test ./..."}`)}}},
		{Role: convo.RoleToolResult, ToolCallID: "c1", ToolName: "bash", IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: "FAIL parser_test.go:12\nexpected 1\ngot 2\n"}}},
		{Role: convo.RoleAssistant, Timestamp: 1796126338000, Content: []convo.Block{{Type: convo.BlockText, Text: "The parser drops a token."}}},
	}
	rt := []store.RuntimeRecord{{Type: store.RuntimeCompaction, Data: json.RawMessage(`{"summary":"The user asked why\nthe parser fails.","messageCount":3}`)}}
	return h, msgs, rt
}

func TestMarkdownHasTitleDatesAndModel(t *testing.T) {
	out := string(Markdown(session()))
	for _, want := range []string{"# Fix the parser\n", "- Created: 2026-12-01 ", " UTC\n", "- Model: anthropic/claude-x (effort high)\n", "- Messages: 4\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestMarkdownFoldsEachToolCallToOneLineWithItsResult(t *testing.T) {
	out := string(Markdown(session()))
	want := "- Tool `bash` `{\"command\":\"go test ./...\"}` → error: FAIL parser_test.go:12 (+2 lines)\n"
	if !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
	if strings.Count(out, "FAIL parser_test.go") != 1 {
		t.Errorf("the result is shown apart from its call:\n%s", out)
	}
}

func TestMarkdownNamesAttachmentsAndLeavesThinkingOut(t *testing.T) {
	out := string(Markdown(session()))
	if !strings.Contains(out, "Attached: `main.go`, image (image/png)\n") {
		t.Errorf("attachments not named:\n%s", out)
	}
	if strings.Contains(out, "package main") || strings.Contains(out, "iVBO") || strings.Contains(out, "secret reasoning") ||
		strings.Contains(out, "encrypted") {
		t.Errorf("attachment contents or thinking in the export:\n%s", out)
	}
}

func TestMarkdownMarksCompactionWhereItFalls(t *testing.T) {
	out := string(Markdown(session()))
	i := strings.Index(out, "*Conversation compacted. Summary:* The user asked why the parser fails.")
	j := strings.Index(out, "The parser drops a token.")
	k := strings.Index(out, "Let me run the tests.")
	if i < 0 || !(k < i && i < j) {
		t.Errorf("compaction not between messages 2 and 3:\n%s", out)
	}
}

func TestMarkdownOfAnEmptySessionSaysUntitled(t *testing.T) {
	out := string(Markdown(&store.Header{ID: "x", Cwd: "/w"}, nil, nil))
	if !strings.HasPrefix(out, "# Untitled session\n") || !strings.Contains(out, "- Messages: 0\n") {
		t.Errorf("got\n%s", out)
	}
}

// orphanResults is a history of n tool results whose calls are not in it
// (an imported file that lost them), after one call that is.
func orphanResults(n int) []convo.Message {
	msgs := []convo.Message{{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "c0", Name: "read", Arguments: json.RawMessage(`{}`)}}},
		{Role: convo.RoleToolResult, ToolCallID: "c0", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "folded"}}}}
	for i := range n {
		msgs = append(msgs, convo.Message{Role: convo.RoleToolResult, ToolCallID: fmt.Sprintf("lost-%d", i), ToolName: "bash", Content: []convo.Block{{Type: convo.BlockText, Text: "alone"}}})
	}
	return msgs
}

// A tool result whose call is in the history is folded into the call's
// line; one whose call is not gets a line of its own, once.
func TestMarkdownGivesAToolResultWithoutItsCallItsOwnLine(t *testing.T) {
	out := string(Markdown(&store.Header{ID: "s", Cwd: "/w"}, orphanResults(3), nil))
	if n := strings.Count(out, "- bash result: ok: alone\n"); n != 3 {
		t.Errorf("%d lines for the 3 results without a call, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "read result") || !strings.Contains(out, "- Tool `read` `{}` → ok: folded\n") {
		t.Errorf("the result of a call in the history is not folded into it:\n%s", out)
	}
}

// BenchmarkMarkdownOrphanToolResults: each result without a call looked
// through the whole history before it for the call (quadratic); a set of
// the calls seen so far answers at once.
func BenchmarkMarkdownOrphanToolResults(b *testing.B) {
	msgs := orphanResults(20000)
	h := &store.Header{ID: "s", Cwd: "/w"}
	for b.Loop() {
		Markdown(h, msgs, nil)
	}
}

// A provider that numbers its calls afresh in every reply (call_1 each
// time): each call shows its own result, not the last one with that id.
func TestMarkdownFoldsEachRepeatedToolCallIDWithItsOwnResult(t *testing.T) {
	var msgs []convo.Message
	for _, text := range []string{"first", "second"} {
		msgs = append(msgs,
			convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"` + text + `"}`)}}},
			convo.Message{Role: convo.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: text + " result"}}})
	}
	out := string(Markdown(&store.Header{ID: "s", Cwd: "/w"}, msgs, nil))
	for _, text := range []string{"first", "second"} {
		want := "- Tool `read` `{\"path\":\"" + text + "\"}` → ok: " + text + " result\n"
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "read result:") {
		t.Errorf("a result got a line of its own:\n%s", out)
	}
}
