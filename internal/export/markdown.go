// Package export renders a stored session for people: the Markdown form
// of `loop export` and session/export (docs/cli.md). The exact JSON form
// is the store's (store.EncodeExport), since it is the session format's
// records.
package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// Markdown renders a session: its title, dates and model, then each turn
// with its text, attachments named, thinking left out (with it the
// Responses API's encrypted reasoning items), and each tool call
// folded to one line with its result summarised. Compaction checkpoints
// are marked where they fall.
func Markdown(h *store.Header, msgs []convo.Message, rt []store.RuntimeRecord) []byte {
	var b bytes.Buffer
	title := h.Title
	if title == "" {
		title = "Untitled session"
	}
	fmt.Fprintf(&b, "# %s\n\n", oneLine(title, 200))
	fmt.Fprintf(&b, "- Session: `%s`\n", h.ID)
	fmt.Fprintf(&b, "- Directory: `%s`\n", h.Cwd)
	fmt.Fprintf(&b, "- Created: %s\n", stamp(h.CreatedAt))
	fmt.Fprintf(&b, "- Updated: %s\n", stamp(h.UpdatedAt))
	if h.Model != nil {
		model := h.Model.Provider + "/" + h.Model.ID
		if h.Effort != "" && h.Effort != "default" {
			model += " (effort " + h.Effort + ")"
		}
		fmt.Fprintf(&b, "- Model: %s\n", model)
	}
	fmt.Fprintf(&b, "- Messages: %d\n", len(msgs))
	if m := h.Migration; m != nil {
		fmt.Fprintf(&b, "- Imported from: %s", m.From)
		if m.SourceApp != "" {
			fmt.Fprintf(&b, " (%s)", m.SourceApp)
		}
		b.WriteString("\n")
	}

	compactions := compactionsAt(rt)
	id := callIDs(msgs)
	results := map[string]*convo.Message{}
	called := map[string]bool{}
	for i := range msgs {
		if msgs[i].Role == convo.RoleToolResult && msgs[i].ToolCallID != "" {
			results[id(i, -1)] = &msgs[i]
		}
	}
	for i := range msgs {
		for _, summary := range compactions[i] {
			fmt.Fprintf(&b, "\n---\n\n*Conversation compacted. Summary:* %s\n", oneLine(summary, 300))
		}
		m := &msgs[i]
		switch m.Role {
		case convo.RoleUser:
			fmt.Fprintf(&b, "\n## User · %s\n\n", stamp(m.Timestamp))
			writeUser(&b, m)
		case convo.RoleAssistant:
			head := "Assistant"
			if m.Model != "" {
				head += " (" + m.Model + ")"
			}
			fmt.Fprintf(&b, "\n## %s · %s\n\n", head, stamp(m.Timestamp))
			writeAssistant(&b, m, func(blk int) *convo.Message { return results[id(i, blk)] })
		case convo.RoleToolResult:
			// Folded into its call's line; one without a call gets its own.
			if !called[id(i, -1)] {
				fmt.Fprintf(&b, "- %s result: %s\n", m.ToolName, resultSummary(m))
			}
		}
		// The calls made so far: a set, not a search back through the
		// history for each result, which made a history of results
		// without their calls (an import that lost them) quadratic.
		for k, blk := range m.Content {
			if blk.Type == convo.BlockToolCall {
				called[id(i, k)] = true
			}
		}
	}
	for _, summary := range compactions[len(msgs)] {
		fmt.Fprintf(&b, "\n---\n\n*Conversation compacted. Summary:* %s\n", oneLine(summary, 300))
	}
	return b.Bytes()
}

func writeUser(b *bytes.Buffer, m *convo.Message) {
	var attached []string
	for _, blk := range m.Content {
		switch {
		case blk.Attachment == convo.AttachmentContext:
			// Loop's context for the model, not the user's words.
		case blk.Type == convo.BlockText && blk.Attachment == "file":
			attached = append(attached, "`"+fileName(blk.Text)+"`")
		case blk.Type == convo.BlockText:
			b.WriteString(strings.TrimRight(blk.Text, "\n"))
			b.WriteString("\n")
		case blk.Type == convo.BlockImage:
			attached = append(attached, "image ("+blk.MimeType+")")
		}
	}
	if len(m.Skills) > 0 {
		fmt.Fprintf(b, "\nSkills: %s\n", strings.Join(m.Skills, ", "))
	}
	if len(attached) > 0 {
		fmt.Fprintf(b, "\nAttached: %s\n", strings.Join(attached, ", "))
	}
}

// callIDs gives each call (block b of message i) and each result (b -1)
// of msgs its id in the session (store.ToolCallIDs): providers that number
// their calls afresh in every reply repeat ids, and each result must fold
// into its own call.
func callIDs(msgs []convo.Message) func(i, b int) string {
	var ids store.ToolCallIDs
	for i := range msgs {
		ids.Add(&msgs[i])
	}
	renamed := map[[2]int]string{}
	for _, r := range ids.Renamed() {
		renamed[[2]int{r.Message, r.Block}] = r.ID
	}
	return func(i, b int) string {
		if id, ok := renamed[[2]int{i, b}]; ok {
			return id
		}
		if b < 0 {
			return msgs[i].ToolCallID
		}
		return msgs[i].Content[b].ID
	}
}

func writeAssistant(b *bytes.Buffer, m *convo.Message, result func(block int) *convo.Message) {
	wrote := false
	for k, blk := range m.Content {
		switch blk.Type {
		case convo.BlockText:
			if strings.TrimSpace(blk.Text) == "" {
				continue
			}
			if wrote {
				b.WriteString("\n")
			}
			b.WriteString(strings.TrimRight(blk.Text, "\n"))
			b.WriteString("\n")
			wrote = true
		case convo.BlockToolCall:
			if wrote {
				b.WriteString("\n")
			}
			line := fmt.Sprintf("- Tool `%s` %s", blk.Name, "`"+oneLine(strings.ReplaceAll(string(blk.Arguments), "`", "'"), 120)+"`")
			if r := result(k); r != nil {
				line += " → " + resultSummary(r)
			} else {
				line += " → no result"
			}
			b.WriteString(line + "\n")
			wrote = false
		}
	}
	if m.StopReason == convo.StopError || m.StopReason == convo.StopAborted {
		msg := m.StopReason
		if m.ErrorMessage != "" {
			msg += ": " + oneLine(m.ErrorMessage, 200)
		}
		fmt.Fprintf(b, "\n*(%s)*\n", msg)
	}
}

// resultSummary is a tool result in a few words: error or ok, its first
// line, and how many more lines there are.
func resultSummary(r *convo.Message) string {
	var text strings.Builder
	images := 0
	for _, blk := range r.Content {
		switch blk.Type {
		case convo.BlockText:
			text.WriteString(blk.Text)
		case convo.BlockImage:
			images++
		}
	}
	status := "ok"
	if r.IsError {
		status = "error"
	}
	s := strings.TrimSpace(text.String())
	lines := strings.Split(s, "\n")
	out := status
	if s != "" {
		out += ": " + oneLine(lines[0], 100)
		if n := len(lines) - 1; n > 0 {
			out += fmt.Sprintf(" (+%d lines)", n)
		}
	}
	if images > 0 {
		out += fmt.Sprintf(" (%d images)", images)
	}
	return out
}

// compactionsAt maps a history position to the summaries of the
// compaction checkpoints made there (runtime records of type
// "compaction", docs/storage.md).
func compactionsAt(rt []store.RuntimeRecord) map[int][]string {
	out := map[int][]string{}
	for _, r := range rt {
		if r.Type != store.RuntimeCompaction {
			continue
		}
		var c struct {
			Summary      string `json:"summary"`
			MessageCount int    `json:"messageCount"`
		}
		if json.Unmarshal(r.Data, &c) == nil {
			out[c.MessageCount] = append(out[c.MessageCount], c.Summary)
		}
	}
	return out
}

// fileName is the name of a file attachment's text block: a label line,
// then the JSON {name, text} (docs/protocol.md 4.4).
func fileName(text string) string {
	_, obj, ok := strings.Cut(text, "\n")
	var f struct {
		Name string `json:"name"`
	}
	if !ok || json.Unmarshal([]byte(obj), &f) != nil || f.Name == "" {
		return "file"
	}
	return f.Name
}

// oneLine collapses whitespace runs to one space and cuts s to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func stamp(ms int64) string {
	if ms <= 0 {
		return "unknown time"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
}
