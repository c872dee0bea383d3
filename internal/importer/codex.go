package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

// convertCodex rebuilds a Codex rollout ($CODEX_HOME/sessions/YYYY/MM/DD/
// rollout-...-<id>.jsonl): response items make the history (harness
// messages and UI event duplicates aside); consecutive reasoning,
// assistant message and tool call items form one assistant message; each
// tool output becomes a tool result, matched by call_id; a compacted line
// becomes a compaction checkpoint. Everything else is kept
// (docs/storage.md, "Imported sessions").
func convertCodex(data []byte, path string) (store.Imported, error) {
	k := newKept()
	lines := k.splitLines(data, 0)
	var imp store.Imported
	h := &imp.Header
	rec := &store.MigrationRecord{From: FormatCodex, SourcePath: path}
	var provider, model string
	metaSeen := false
	toolNames := map[string]string{}
	inAssistant := false // the last message is an assistant message still being built
	for i := range lines {
		l := &lines[i]
		typ := str(l.obj["type"])
		t := parseTime(str(l.obj["timestamp"]))
		if t > 0 {
			if h.CreatedAt == 0 {
				h.CreatedAt = t
			}
			h.UpdatedAt = max(h.UpdatedAt, t)
		} else {
			t = h.UpdatedAt
		}
		p := object(l.obj["payload"])
		switch typ {
		case "session_meta":
			// A forked rollout holds its source's meta too: the first
			// one names this file's thread.
			if !metaSeen {
				metaSeen = true
				rec.SourceID = str(p["id"])
				h.Cwd = str(p["cwd"])
				provider = str(p["model_provider"])
				if v := str(p["cli_version"]); v != "" {
					rec.SourceApp = "codex " + v
				}
				if c := parseTime(str(p["timestamp"])); c > 0 {
					h.CreatedAt = c
				}
			}
			k.entry(l, t, "session_meta", false)
			continue
		case "turn_context":
			if m := str(p["model"]); m != "" {
				model = m
			}
			k.entry(l, t, "turn_context", false)
			continue
		case "compacted":
			// The rollout does not say how many tokens were summarized.
			k.add(store.RuntimeCompaction, t, compactionData(fmt.Sprintf("line-%d", l.n), str(p["message"]), len(imp.Messages), 0, t, nil))
			h.Compaction = &store.CompactionMeta{ID: fmt.Sprintf("line-%d", l.n), MessageCount: len(imp.Messages), CreatedAt: t}
			k.entry(l, t, "compacted", false)
			inAssistant = false
			continue
		case "event_msg":
			switch str(p["type"]) {
			case "turn_aborted":
				// The user stopped the turn (reason "interrupted"; older
				// versions also "replaced", by a new prompt).
				imp.Messages = interrupt(imp.Messages, t, provider, model)
				inAssistant = false
			case "task_complete":
				// The turn's last reply finished: no later stop cuts it.
				if n := len(imp.Messages); n > 0 && imp.Messages[n-1].Role == convo.RoleAssistant && imp.Messages[n-1].StopReason == "" {
					imp.Messages[n-1].StopReason = convo.StopEnd
				}
			}
			k.entry(l, t, "event_msg "+str(p["type"]), false)
			continue
		case "response_item":
		default:
			k.entry(l, t, typ, false)
			continue
		}
		item := str(p["type"])
		fields := without(l.obj, "payload", "type", "timestamp")
		assistant := func() *convo.Message {
			n := len(imp.Messages)
			if !inAssistant || n == 0 {
				imp.Messages = append(imp.Messages, convo.Message{Role: convo.RoleAssistant, Provider: provider, Model: model, Timestamp: t, Content: []convo.Block{}})
				n++
				inAssistant = true
			}
			return &imp.Messages[n-1]
		}
		switch {
		case item == "message" && str(p["role"]) == "user" && codexTurnAborted(p):
			// What Codex tells the model of a stopped turn, just before
			// its turn_aborted event: one stop, not a prompt.
			imp.Messages = interrupt(imp.Messages, t, provider, model)
			inAssistant = false
			k.entry(l, t, "interrupt marker", false)
		case item == "message" && str(p["role"]) == "user" && !codexHarness(p):
			inAssistant = false
			m := convo.Message{Role: convo.RoleUser, Timestamp: t, Content: []convo.Block{}}
			codexContent(&m, p["content"], fields)
			imp.Messages = append(imp.Messages, m)
			addFields(fields, p, "type", "role", "content")
			k.field(len(imp.Messages)-1, l, t, fields)
		case item == "message" && str(p["role"]) == "assistant":
			m := assistant()
			codexContent(m, p["content"], fields)
			addFields(fields, p, "type", "role", "content")
			k.field(len(imp.Messages)-1, l, t, fields)
		case item == "message":
			k.entry(l, t, "harness message ("+str(p["role"])+")", false)
		case item == "reasoning":
			var parts []string
			for _, s := range objects(p["summary"]) {
				parts = append(parts, str(s["text"]))
			}
			if len(parts) == 0 {
				for _, c := range objects(p["content"]) {
					parts = append(parts, str(c["text"]))
				}
			}
			m := assistant()
			m.Content = append(m.Content, convo.Block{Type: convo.BlockThinking, Text: strings.Join(parts, "\n\n")})
			// encrypted_content is OpenAI's; it is not an Anthropic
			// signature, so it stays a kept field.
			addFields(fields, p, "type", "summary")
			k.field(len(imp.Messages)-1, l, t, fields)
		case item == "function_call" || item == "custom_tool_call" || item == "local_shell_call":
			id, name := str(p["call_id"]), str(p["name"])
			var args json.RawMessage
			switch item {
			case "function_call":
				text := str(p["arguments"])
				if json.Valid([]byte(text)) && strings.HasPrefix(strings.TrimSpace(text), "{") {
					args = json.RawMessage(text)
				} else {
					args = mustJSON(map[string]string{"arguments": text})
				}
				addFields(fields, p, "type", "call_id", "name", "arguments")
			case "custom_tool_call":
				args = mustJSON(map[string]string{"input": str(p["input"])})
				addFields(fields, p, "type", "call_id", "name", "input")
			default:
				name = "local_shell"
				// A copy: the message outlives the source's bytes.
				args = bytes.Clone(p["action"])
				addFields(fields, p, "type", "call_id", "action")
			}
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			toolNames[id] = name
			m := assistant()
			m.Content = append(m.Content, convo.Block{Type: convo.BlockToolCall, ID: id, Name: name, Arguments: args})
			m.StopReason = convo.StopToolUse
			k.field(len(imp.Messages)-1, l, t, fields)
		case item == "function_call_output" || item == "custom_tool_call_output":
			inAssistant = false
			id := str(p["call_id"])
			r := convo.Message{Role: convo.RoleToolResult, Timestamp: t, ToolCallID: id, ToolName: toolNames[id], Content: []convo.Block{}}
			text, isErr, ok, whole := codexOutput(p["output"])
			if ok {
				r.Content = append(r.Content, convo.Block{Type: convo.BlockText, Text: text})
			} else {
				codexContent(&r, p["output"], fields)
			}
			r.IsError = isErr
			imp.Messages = append(imp.Messages, r)
			addFields(fields, p, "type", "call_id")
			if !ok || whole {
				// Mapped whole; a JSON-wrapped output keeps its metadata.
				delete(fields, "payload.output")
			}
			k.field(len(imp.Messages)-1, l, t, fields)
		default:
			k.entry(l, t, "response_item "+item, false)
		}
	}
	if !metaSeen {
		return imp, fmt.Errorf("%w: no session_meta line", ErrNoConversation)
	}
	if len(imp.Messages) == 0 {
		return imp, fmt.Errorf("%w: no messages", ErrNoConversation)
	}
	for i := range imp.Messages {
		if m := &imp.Messages[i]; m.Role == convo.RoleAssistant && m.StopReason == "" {
			m.StopReason = convo.StopEnd
		}
	}
	if model != "" {
		h.Model = &store.ModelRef{Provider: provider, ID: model}
	}
	rec.Notes = append(k.notes(), "token counts stay in the kept event_msg/token_usage_record lines; the rollout has no title (session_index.jsonl is not read)")
	h.Migration = rec
	imp.Runtime = k.rt
	return imp, nil
}

// addFields adds the members of a response item that were not mapped, as
// payload.<name>.
func addFields(fields, payload map[string]raw, mapped ...string) {
	for name, v := range without(payload, mapped...) {
		fields["payload."+name] = v
	}
}

// codexHarness reports a user-role message the harness wrote: environment
// context, AGENTS.md and user instructions (and 0.171's provenance mark).
func codexHarness(p map[string]raw) bool {
	for _, c := range objects(p["content"]) {
		text := strings.TrimSpace(prefix(c["text"], 4096))
		for _, mark := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions"} {
			if strings.HasPrefix(text, mark) {
				return true
			}
		}
	}
	meta := object(p["internal_chat_message_metadata_passthrough"])
	for _, it := range objects(meta["content_item_metadata"]) {
		if str(object(it["provenance"])["type"]) == "harness" {
			return true
		}
	}
	return false
}

// codexTurnAborted reports the user-role message Codex writes after the
// user stopped a turn ("<turn_aborted>\nThe user interrupted the previous
// turn on purpose. ...").
func codexTurnAborted(p map[string]raw) bool {
	content := objects(p["content"])
	return len(content) > 0 && strings.HasPrefix(strings.TrimSpace(prefix(content[0]["text"], 4096)), "<turn_aborted>")
}

// codexContent maps input_text, output_text and input_image items.
func codexContent(m *convo.Message, content raw, fields map[string]raw) {
	for i, c := range objects(content) {
		switch str(c["type"]) {
		case "input_text", "output_text", "text":
			m.Content = append(m.Content, convo.Block{Type: convo.BlockText, Text: str(c["text"])})
		case "input_image":
			url := str(c["image_url"])
			if mime, data, ok := dataURL(url); ok {
				m.Content = append(m.Content, convo.Block{Type: convo.BlockImage, Data: data, MimeType: mime})
				continue
			}
			fallthrough
		default:
			fields[fmt.Sprintf("payload.content[%d]", i)] = mustJSON(c)
		}
	}
}

func dataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	mime, found2 := strings.CutSuffix(meta, ";base64")
	return mime, data, found && found2
}

// exitLinePrefix starts the line 0.171 ends a command's output with,
// before the code.
const exitLinePrefix = "Process exited with code "

// exitCode finds the first line that starts with exitLinePrefix and a
// digit, and returns the digits that follow (what the pattern
// `(?m)^Process exited with code (\d+)` would capture, without a regular
// expression compiled when the package initialises, in every process).
func exitCode(text string) (digits string, ok bool) {
	for line := range strings.Lines(text) {
		rest, found := strings.CutPrefix(line, exitLinePrefix)
		if !found {
			continue
		}
		n := 0
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		if n > 0 {
			return rest[:n], true
		}
	}
	return "", false
}

// codexOutput reads a tool output string: 0.63 wraps it as JSON
// {"output", "metadata": {"exit_code"}}, 0.171 says "Process exited with
// code N", or ends in "aborted by user" for a command the user stopped
// (an error, as the engine records its own). ok is false for an output
// that is not a string (content items); whole says text is the output
// string itself, not the output unwrapped from it.
func codexOutput(output raw) (text string, isErr, ok, whole bool) {
	text, ok = jsonenc.DecodeString(output)
	if !ok {
		return "", false, false, false
	}
	if out, code, ok := codexWrapped(text); ok {
		return out, code != nil && *code != 0, true, false
	}
	if text == "aborted by user" || strings.HasSuffix(text, "\naborted by user") {
		return text, true, true, true
	}
	if digits, ok := exitCode(text); ok {
		n, _ := strconv.Atoi(digits)
		return text, n != 0, true, true
	}
	return text, false, true, true
}

// codexWrapped reads 0.63's {"output", "metadata": {"exit_code"}}. Only
// text that starts as an object is parsed: another output is not copied
// to be tried.
func codexWrapped(text string) (output string, exitCode *int, ok bool) {
	if t := strings.TrimLeft(text, " \t\r\n"); t == "" || t[0] != '{' {
		return "", nil, false
	}
	var wrapped struct {
		Output   raw `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(text), &wrapped) != nil {
		return "", nil, false
	}
	output, ok = jsonenc.DecodeString(wrapped.Output)
	return output, wrapped.Metadata.ExitCode, ok
}
