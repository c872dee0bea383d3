package importer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

// The fixtures under testdata were written by the real tools (Claude Code
// 1.0.128, 2.0.77 and 2.1.332; Codex 0.63.0 and 0.171.0) against a local
// mock model; testdata/README.md says how.

func convertFile(t *testing.T, name string) store.Imported {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := Convert(data, "/src/"+name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return imp
}

func userTexts(msgs []convo.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == convo.RoleUser {
			for _, b := range m.Content {
				if b.Type == convo.BlockText {
					out = append(out, b.Text)
				}
			}
		}
	}
	return out
}

// checkToolPairs: every tool call has exactly one result after it, with
// its name, and no result lacks its call.
func checkToolPairs(t *testing.T, name string, msgs []convo.Message) {
	t.Helper()
	calls := map[string]string{}
	answered := map[string]bool{}
	for i, m := range msgs {
		for _, b := range m.Content {
			if b.Type == convo.BlockToolCall {
				calls[b.ID] = b.Name
				if !json.Valid(b.Arguments) {
					t.Errorf("%s: message %d: arguments %q are not JSON", name, i, b.Arguments)
				}
			}
		}
		if m.Role == convo.RoleToolResult {
			if calls[m.ToolCallID] != m.ToolName || m.ToolName == "" || answered[m.ToolCallID] {
				t.Errorf("%s: message %d: result for %s (%q) does not answer one earlier call", name, i, m.ToolCallID, m.ToolName)
			}
			answered[m.ToolCallID] = true
		}
	}
	if len(answered) != len(calls) {
		t.Errorf("%s: %d tool calls, %d answered", name, len(calls), len(answered))
	}
}

func checkpoint(t *testing.T, imp *store.Imported) (summary string, count int) {
	t.Helper()
	for _, r := range imp.Runtime {
		if r.Type == store.RuntimeCompaction {
			var c struct {
				Summary      string `json:"summary"`
				MessageCount int    `json:"messageCount"`
			}
			if err := json.Unmarshal(r.Data, &c); err != nil {
				t.Fatal(err)
			}
			return c.Summary, c.MessageCount
		}
	}
	t.Fatal("no compaction checkpoint")
	return "", 0
}

func TestDetectNamesEachFormatFromContent(t *testing.T) {
	for name, want := range map[string]string{
		"claude/v1.0.128-f4aaf306.jsonl":     FormatClaude,
		"claude/v1.0.128-summary-only.jsonl": FormatClaude,
		"claude/v2.0.77-103240c0.jsonl":      FormatClaude,
		"claude/v2.1.332-08543a01.jsonl":     FormatClaude,
		"codex/v0.63.0-rollout-4bc0.jsonl":   FormatCodex,
		"codex/v0.171.0-rollout-5bb4.jsonl":  FormatCodex,
	} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		if got := Detect(data); got != want {
			t.Errorf("%s: Detect = %q, want %q", name, got, want)
		}
	}
	for _, s := range []string{`{"type":"session","version":3,"id":"x","cwd":"/"}`, `{"format":"loop-export","version":1}`, `{"hello":"world"}`, "not json\n", ""} {
		got := Detect([]byte(s))
		want := map[string]string{`{"type":"session","version":3,"id":"x","cwd":"/"}`: FormatPi, `{"format":"loop-export","version":1}`: FormatLoop}[s]
		if got != want {
			t.Errorf("Detect(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestClaudeTranscriptsOfEachVersionRebuildTheMainBranch(t *testing.T) {
	prompts := []string{"Run a shell command that prints hello", "Now make a command fail", "Please delegate this to a subagent", "Run a shell command that prints hello again"}
	for _, name := range []string{"claude/v1.0.128-f4aaf306.jsonl", "claude/v2.0.77-103240c0.jsonl"} {
		imp := convertFile(t, name)
		if got := userTexts(imp.Messages); strings.Join(got, "|") != strings.Join(prompts, "|") {
			t.Errorf("%s: prompts %q, want %q (harness turns and the compaction summary are not prompts)", name, got, prompts)
		}
		checkToolPairs(t, name, imp.Messages)
		var failed int
		for _, m := range imp.Messages {
			if m.IsError {
				failed++
			}
			if m.Role == convo.RoleAssistant && (m.Provider != "anthropic" || m.Model == "" || m.Usage == nil || m.StopReason == "") {
				t.Errorf("%s: assistant message without provider, model, usage or stop reason: %+v", name, m)
			}
		}
		if failed != 1 {
			t.Errorf("%s: %d failed tool results, want 1 (the failing ls)", name, failed)
		}
		// Thinking, text and tool_use lines of one API message are one message.
		if a := imp.Messages[1]; len(a.Content) != 3 || a.Content[0].Type != convo.BlockThinking || a.Content[0].Signature == "" || a.Content[2].Type != convo.BlockToolCall {
			t.Errorf("%s: first answer %+v, want thinking (signed), text, tool call in one message", name, a.Content)
		}
		summary, count := checkpoint(t, &imp)
		if !strings.Contains(summary, "Primary Request") || count != 12 || imp.Header.Compaction == nil || imp.Header.Compaction.MessageCount != 12 {
			t.Errorf("%s: checkpoint at %d with summary %.60q; header %+v", name, count, summary, imp.Header.Compaction)
		}
		m := imp.Header.Migration
		if m.From != FormatClaude || m.SourceID == "" || !strings.HasPrefix(m.SourceApp, "claude-code ") || len(m.Notes) == 0 {
			t.Errorf("%s: import record %+v", name, m)
		}
		if imp.Header.CreatedAt == 0 || imp.Header.UpdatedAt < imp.Header.CreatedAt || imp.Header.Cwd == "" {
			t.Errorf("%s: header times or cwd missing: %+v", name, imp.Header)
		}
	}
}

func TestClaudeInlineSidechainIsKeptOffTheHistory(t *testing.T) {
	imp := convertFile(t, "claude/v1.0.128-f4aaf306.jsonl")
	off := 0
	for _, r := range imp.Runtime {
		if r.Type == store.RuntimeImportEntry && strings.Contains(string(r.Data), `"offPath":true`) {
			if !strings.Contains(string(r.Data), `"isSidechain":true`) {
				t.Errorf("off-branch record that is not the sidechain: %.200s", r.Data)
			}
			off++
		}
	}
	if off != 6 {
		t.Errorf("%d sidechain lines kept off the branch, want 6", off)
	}
}

func TestClaudeSummaryLineOfTheBranchIsTheTitle(t *testing.T) {
	imp := convertFile(t, "claude/v1.0.128-f4aaf306.jsonl")
	if imp.Header.Title != "Mock shell session" || imp.Header.TitleSource != store.TitleAuto {
		t.Errorf("title %q (%s)", imp.Header.Title, imp.Header.TitleSource)
	}
}

func TestClaudeCustomTitleWinsOverSummary(t *testing.T) {
	// Made by hand from the line shapes of the fixtures: a /rename line
	// (custom-title, as 2.1.332 writes it) after a summary line.
	src := `{"type":"summary","summary":"Auto title","leafUuid":"u2"}
{"parentUuid":null,"isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000001","version":"2.1.332","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-12-01T11:00:00.000Z"}
{"parentUuid":"u1","isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000001","version":"2.1.332","type":"assistant","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}},"uuid":"u2","timestamp":"2026-12-01T11:00:01.000Z"}
{"type":"custom-title","customTitle":"my renamed session","sessionId":"3f1c2a8e-0000-4000-8000-000000000001"}
`
	imp, err := Convert([]byte(src), "/src/x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if imp.Header.Title != "my renamed session" || imp.Header.TitleSource != store.TitleManual {
		t.Errorf("title %q (%s)", imp.Header.Title, imp.Header.TitleSource)
	}
}

func TestClaudeImagePromptBecomesAnImageBlock(t *testing.T) {
	imp := convertFile(t, "claude/v2.1.332-08543a01.jsonl")
	p := imp.Messages[0]
	if p.Role != convo.RoleUser || len(p.Content) != 2 || p.Content[1].Type != convo.BlockImage || p.Content[1].MimeType != "image/png" || p.Content[1].Data == "" {
		t.Errorf("first message %+v, want the prompt text and a PNG", p)
	}
	checkToolPairs(t, "2.1.332", imp.Messages)
	// The attachments and API request records of 2.1 are kept, named.
	if !strings.Contains(strings.Join(imp.Header.Migration.Notes, "\n"), "attachment") {
		t.Errorf("notes do not name the attachment lines: %q", imp.Header.Migration.Notes)
	}
}

func TestClaudeFilesWithoutAConversationAreNotSessions(t *testing.T) {
	for _, name := range []string{"claude/v1.0.128-summary-only.jsonl", "claude/v2.0.77-agent-ad2d823.jsonl"} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		if _, err := Convert(data, name); !errors.Is(err, ErrNoConversation) {
			t.Errorf("%s: %v, want ErrNoConversation", name, err)
		}
	}
}

func TestCodexRolloutsOfEachVersionRebuildTheHistory(t *testing.T) {
	prompts := []string{"Run a shell command that prints hello", "Now make a command fail", "Run a shell command that prints hello again"}
	for _, name := range []string{"codex/v0.63.0-rollout-4bc0.jsonl", "codex/v0.171.0-rollout-5bb4.jsonl"} {
		imp := convertFile(t, name)
		if got := userTexts(imp.Messages); strings.Join(got, "|") != strings.Join(prompts, "|") {
			t.Errorf("%s: prompts %q, want %q (environment context is the harness's)", name, got, prompts)
		}
		checkToolPairs(t, name, imp.Messages)
		var failed int
		for _, m := range imp.Messages {
			if m.IsError {
				failed++
			}
		}
		if failed != 1 {
			t.Errorf("%s: %d failed tool results, want 1 (exit code 2)", name, failed)
		}
		if a := imp.Messages[1]; a.Role != convo.RoleAssistant || len(a.Content) != 3 || a.Content[0].Type != convo.BlockThinking || a.Model != "gpt-mock" || a.Provider != "mock" {
			t.Errorf("%s: first answer %+v, want reasoning, text and the call in one message of mock/gpt-mock", name, a)
		}
		summary, count := checkpoint(t, &imp)
		if !strings.HasPrefix(summary, "Another language model started") || count != 12 {
			t.Errorf("%s: checkpoint at %d, summary %.60q", name, count, summary)
		}
		m := imp.Header.Migration
		if m.From != FormatCodex || m.SourceID == "" || !strings.HasPrefix(m.SourceApp, "codex 0.") {
			t.Errorf("%s: import record %+v", name, m)
		}
		if imp.Header.Model == nil || imp.Header.Model.ID != "gpt-mock" {
			t.Errorf("%s: model %+v", name, imp.Header.Model)
		}
	}
}

func TestCodexOutputOfEachVersionSaysWhetherTheCommandFailed(t *testing.T) {
	for raw, want := range map[string]bool{
		`"{\"output\":\"ls: cannot access\\n\",\"metadata\":{\"exit_code\":2,\"duration_seconds\":0.0}}"`: true,
		`"{\"output\":\"hello\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"`:             false,
		`"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nls: x"`:               true,
		`"Chunk ID: 1\nProcess exited with code 0\nOutput:\nhello"`:                                       false,
		`"Wall time: 4.0 seconds\naborted by user"`:                                                       true,
		`"plain text"`: false,
	} {
		if _, isErr, ok, _ := codexOutput(jsonenc.Raw(raw)); !ok || isErr != want {
			t.Errorf("codexOutput(%s) = error %v (ok %v), want %v", raw, isErr, ok, want)
		}
	}
}

func TestLinesThatAreNotJSONAreKeptNotDropped(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "codex/v0.63.0-rollout-4bc0.jsonl"))
	data = append(data, []byte("{torn line\n")...)
	imp, err := Convert(data, "/src/x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range imp.Runtime {
		found = found || (r.Type == store.RuntimeImportUnparsed && strings.Contains(string(r.Data), "{torn line"))
	}
	if !found {
		t.Error("the torn line is not kept as an import.unparsed record")
	}
	if !strings.Contains(strings.Join(imp.Header.Migration.Notes, "\n"), "not JSON") {
		t.Errorf("notes do not name the torn line: %q", imp.Header.Migration.Notes)
	}
}
