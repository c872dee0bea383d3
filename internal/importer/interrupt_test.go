package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// The interrupted fixtures were written by the real tools against a local
// mock model, the user stopping turns as the tools let them
// (testdata/README.md): Claude Code 2.1.332 stopped while a reply
// streamed, while a reply's tool had run and the reply still streamed,
// and while a tool ran (the file ends with that marker); Codex 0.171.0
// stopped while a reply streamed and while a tool ran (the file ends with
// that stop).
const (
	claudeInterrupted = "claude/v2.1.332-interrupted-cf1b9b87.jsonl"
	codexInterrupted  = "codex/v0.171.0-rollout-interrupted-e8ef.jsonl"
)

// checkNoTypedStops: no user message holds a stop marker, and no two user
// messages follow each other (a stop is not a prompt).
func checkNoTypedStops(t *testing.T, msgs []convo.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Role != convo.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if strings.Contains(b.Text, "interrupted by user") || strings.Contains(b.Text, "<turn_aborted>") {
				t.Errorf("message %d: the stop marker %.60q became a user message", i, b.Text)
			}
		}
		if i > 0 && msgs[i-1].Role == convo.RoleUser {
			t.Errorf("messages %d and %d: two user messages in a row", i-1, i)
		}
	}
}

func aborted(m convo.Message) bool {
	return m.Role == convo.RoleAssistant && m.StopReason == convo.StopAborted && m.ErrorMessage == abortedReply
}

func texts(m convo.Message) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b.Text)
	}
	return out
}

// after returns the index of the message after the prompt text.
func after(t *testing.T, msgs []convo.Message, prompt string) int {
	t.Helper()
	for i, m := range msgs {
		if m.Role == convo.RoleUser && len(m.Content) > 0 && m.Content[0].Text == prompt {
			return i + 1
		}
	}
	t.Fatalf("no prompt %q", prompt)
	return -1
}

func TestClaudeInterruptedTurnsEndInAnAbortedReplyNotAPrompt(t *testing.T) {
	imp := convertFile(t, claudeInterrupted)
	msgs := imp.Messages
	checkNoTypedStops(t, msgs)
	want := []string{"Please answer slowly", "Say hello", "Run the paused command", "Say hello again", "Run a slow command"}
	if got := userTexts(msgs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("prompts %q, want %q", got, want)
	}
	// Stopped while the reply streamed: the reply, as far as it was
	// written, is the aborted one.
	if m := msgs[after(t, msgs, "Please answer slowly")]; !aborted(m) || strings.Join(texts(m), "") != "Starting the long answer.This answer streams " {
		t.Errorf("streamed reply %+v, want its text with stopReason aborted", m)
	}
	// Stopped after the reply's tool ran, while the reply went on: an
	// empty aborted reply follows the tool's result.
	i := after(t, msgs, "Run the paused command")
	if len(msgs) < i+3 || msgs[i].StopReason != convo.StopToolUse || msgs[i+1].Role != convo.RoleToolResult || !aborted(msgs[i+2]) || len(msgs[i+2].Content) != 0 {
		t.Errorf("paused turn %+v, want the call, its result, an empty aborted reply", msgs[i:])
	}
	// Stopped while the tool ran, the marker last in the file: the
	// result says the tool failed, and an empty aborted reply ends the
	// history.
	i = after(t, msgs, "Run a slow command")
	last := msgs[len(msgs)-1]
	if len(msgs) != i+3 || !msgs[i+1].IsError || !aborted(last) || len(last.Content) != 0 || last.Model != "claude-sonnet-4-5" || last.Provider != "anthropic" {
		t.Errorf("last turn %+v, want the call, its failed result, an empty aborted reply of the model", msgs[i:])
	}
	checkToolPairs(t, claudeInterrupted, msgs)
	// The markers themselves are kept.
	markers := 0
	for _, r := range imp.Runtime {
		d := string(r.Data)
		if r.Type == store.RuntimeImportEntry && strings.Contains(d, `"type":"user"`) && strings.Contains(d, "[Request interrupted by user") {
			markers++
		}
	}
	if markers != 3 {
		t.Errorf("%d markers kept as import.entry records, want 3", markers)
	}
}

// Older transcripts, and a stop that came before the tool's result was
// written, hold the call and the marker with no result between them: the
// call stays unanswered (a request supplies the missing result) and an
// empty aborted reply ends the turn.
func TestClaudeInterruptBeforeTheToolResultEndsTheTurnAfterTheCall(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", claudeInterrupted))
	if err != nil {
		t.Fatal(err)
	}
	// Drop the result line of the last turn and hang the marker on the
	// call, as such a file links them.
	var lines []string
	var callUUID, resultUUID string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if strings.Contains(l, `"toolDenialKind":"user-rejected"`) {
			resultUUID = field(l, "uuid")
			callUUID = field(l, "parentUuid")
			continue
		}
		lines = append(lines, l)
	}
	if resultUUID == "" {
		t.Fatal("fixture without the rejected result")
	}
	src := strings.ReplaceAll(strings.Join(lines, ""), `"parentUuid":"`+resultUUID+`"`, `"parentUuid":"`+callUUID+`"`)
	imp, err := Convert([]byte(src), "/src/x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	msgs := imp.Messages
	checkNoTypedStops(t, msgs)
	i := after(t, msgs, "Run a slow command")
	if len(msgs) != i+2 || msgs[i].StopReason != convo.StopToolUse || !aborted(msgs[i+1]) || len(msgs[i+1].Content) != 0 {
		t.Errorf("last turn %+v, want the call (toolUse), then an empty aborted reply", msgs[i:])
	}
}

// field returns the string member name of a JSON line, as the fixture
// writes it.
func field(line, name string) string {
	_, rest, ok := strings.Cut(line, `"`+name+`":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// A marker in one line with the next prompt: the stop ends the turn, the
// text is the prompt.
func TestClaudeInterruptMarkerBesideAPromptEndsTheTurnBeforeIt(t *testing.T) {
	src := `{"parentUuid":null,"isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000002","version":"2.1.332","type":"user","message":{"role":"user","content":"rename it"},"uuid":"u1","timestamp":"2026-12-01T11:00:00.000Z"}
{"parentUuid":"u1","isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000002","version":"2.1.332","type":"assistant","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Renaming now"}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}},"uuid":"u2","timestamp":"2026-12-01T11:00:01.000Z"}
{"parentUuid":"u2","isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000002","version":"2.1.332","type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"},{"type":"text","text":"stop, keep the old name"}]},"uuid":"u3","timestamp":"2026-12-01T11:00:02.000Z"}
`
	imp, err := Convert([]byte(src), "/src/x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	msgs := imp.Messages
	checkNoTypedStops(t, msgs)
	if len(msgs) != 3 || !aborted(msgs[1]) || texts(msgs[1])[0] != "Renaming now" || strings.Join(texts(msgs[2]), "|") != "stop, keep the old name" {
		t.Errorf("messages %+v, want the prompt, the aborted reply, the new prompt alone", msgs)
	}
}

func TestCodexTurnAbortedEndsTheTurnInAnAbortedReplyNotAPrompt(t *testing.T) {
	imp := convertFile(t, codexInterrupted)
	msgs := imp.Messages
	checkNoTypedStops(t, msgs)
	want := []string{"Please answer slowly", "Say hello", "Run a slow command"}
	if got := userTexts(msgs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("prompts %q, want %q", got, want)
	}
	// Each stop is written twice (the <turn_aborted> message for the
	// model, then the turn_aborted event): one aborted reply each.
	n := 0
	for _, m := range msgs {
		if aborted(m) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d aborted replies, want 2 (one per stop)", n)
	}
	if m := msgs[after(t, msgs, "Please answer slowly")]; !aborted(m) || strings.Join(texts(m), "") != "Starting the long answer." {
		t.Errorf("streamed reply %+v, want what was written of it, aborted", m)
	}
	if m := msgs[after(t, msgs, "Say hello")]; m.StopReason != convo.StopEnd {
		t.Errorf("finished reply %+v, want stopReason stop", m)
	}
	i := after(t, msgs, "Run a slow command")
	last := msgs[len(msgs)-1]
	if len(msgs) != i+3 || msgs[i].StopReason != convo.StopToolUse || !msgs[i+1].IsError || !aborted(last) || len(last.Content) != 0 || last.Model != "gpt-mock" {
		t.Errorf("last turn %+v, want the call, its failed result (aborted by user), an empty aborted reply", msgs[i:])
	}
	checkToolPairs(t, codexInterrupted, msgs)
}

// Versions that write only the turn_aborted event end the turn the same
// way.
func TestCodexTurnAbortedEventAloneEndsTheTurn(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", codexInterrupted))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(l, `"text":"<turn_aborted>`) {
			kept = append(kept, l)
		}
	}
	imp, err := Convert([]byte(strings.Join(kept, "")), "/src/x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	checkNoTypedStops(t, imp.Messages)
	full := convertFile(t, codexInterrupted)
	if len(imp.Messages) != len(full.Messages) || !aborted(imp.Messages[len(imp.Messages)-1]) {
		t.Fatalf("%d messages, want %d as with both markers", len(imp.Messages), len(full.Messages))
	}
	for i := range imp.Messages {
		if imp.Messages[i].Role != full.Messages[i].Role || imp.Messages[i].StopReason != full.Messages[i].StopReason {
			t.Errorf("message %d: %s %s, want %s %s", i, imp.Messages[i].Role, imp.Messages[i].StopReason, full.Messages[i].Role, full.Messages[i].StopReason)
		}
	}
}
