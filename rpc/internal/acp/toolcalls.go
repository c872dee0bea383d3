package acp

import (
	"encoding/json"
	"path/filepath"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/tools"
)

// How a tool call looks to an ACP client. Live updates and a load's replay
// both build their cards here, so a replayed call has the title, kind,
// locations and content it had live.

// toolCallStart is the tool_call that announces a call once its arguments
// are complete.
func toolCallStart(id, name string, args json.RawMessage, cwd string) toolCallUpdate {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return toolCallUpdate{
		SessionUpdate: "tool_call",
		ToolCallID:    id,
		Title:         tools.Title(name, args),
		Kind:          tools.Kind(name),
		Status:        "pending",
		Locations:     toolLocations(name, args, cwd),
		RawInput:      args,
	}
}

// toolCallEnd is the tool_call_update that closes a call with its result.
// details (live only: the history keeps no Details) gives write and edit a
// whole-file diff; without them the diff comes from the arguments.
func toolCallEnd(id, name string, args json.RawMessage, cwd string, result []convo.Block, isError bool, details map[string]any) toolCallUpdate {
	status := "completed"
	if isError {
		status = "failed"
	}
	return toolCallUpdate{
		SessionUpdate: "tool_call_update",
		ToolCallID:    id,
		Status:        status,
		Content:       toolContent(name, args, cwd, result, isError, details),
	}
}

func toolContent(name string, args json.RawMessage, cwd string, result []convo.Block, isError bool, details map[string]any) []toolCallContent {
	if !isError && (name == tools.NameWrite || name == tools.NameEdit) {
		if d := detailsDiff(details); d != nil {
			return d
		}
		if d := argsDiff(name, args, cwd); d != nil {
			return d
		}
	}
	var out []toolCallContent
	for _, b := range result {
		switch b.Type {
		case convo.BlockText:
			if b.Text != "" {
				c := textBlock(b.Text)
				out = append(out, toolCallContent{Type: "content", Content: &c})
			}
		case convo.BlockImage:
			c := contentBlock{Type: "image", Data: b.Data, MimeType: b.MimeType}
			out = append(out, toolCallContent{Type: "content", Content: &c})
		}
	}
	return out
}

// detailsDiff is the whole-file diff write and edit report in Details.
func detailsDiff(details map[string]any) []toolCallContent {
	p, _ := details["path"].(string)
	oldText, okOld := details["oldText"].(string)
	newText, okNew := details["newText"].(string)
	if p == "" || !okOld || !okNew {
		return nil
	}
	d := toolCallContent{Type: "diff", Path: p, NewText: &newText}
	if created, _ := details["created"].(bool); !created {
		d.OldText = &oldText
	}
	return []toolCallContent{d}
}

// argsDiff is what the arguments say about a change: a write's new content
// (the old one is not known), an edit's replacements.
func argsDiff(name string, args json.RawMessage, cwd string) []toolCallContent {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		OldText *string `json:"oldText"`
		NewText *string `json:"newText"`
		Edits   []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil
	}
	p := absPath(cwd, a.Path)
	switch name {
	case tools.NameWrite:
		if a.Content == nil {
			return nil
		}
		return []toolCallContent{{Type: "diff", Path: p, NewText: a.Content}}
	case tools.NameEdit:
		var out []toolCallContent
		if a.OldText != nil && a.NewText != nil {
			out = append(out, toolCallContent{Type: "diff", Path: p, OldText: a.OldText, NewText: a.NewText})
		}
		for i := range a.Edits {
			e := &a.Edits[i]
			out = append(out, toolCallContent{Type: "diff", Path: p, OldText: &e.OldText, NewText: &e.NewText})
		}
		return out
	}
	return nil
}

// toolLocations are the files a call touches, for clients that follow
// along: the path argument, and read's first line.
func toolLocations(name string, args json.RawMessage, cwd string) []toolCallLocation {
	var a struct {
		Path   string `json:"path"`
		Offset *int   `json:"offset"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	switch name {
	case tools.NameRead, tools.NameWrite, tools.NameEdit:
		if a.Path == "" {
			return nil
		}
		loc := toolCallLocation{Path: absPath(cwd, a.Path)}
		if name == tools.NameRead && a.Offset != nil && *a.Offset > 0 {
			line := *a.Offset
			loc.Line = &line
		}
		return []toolCallLocation{loc}
	case tools.NameLs, tools.NameGrep, tools.NameFind:
		p := a.Path
		if p == "" {
			p = "."
		}
		return []toolCallLocation{{Path: absPath(cwd, p)}}
	}
	return nil
}

func absPath(cwd, p string) string {
	if filepath.IsAbs(p) || cwd == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// progressUpdate shows a running call's output so far (bash streams it).
func progressUpdate(id string, out []byte) toolCallUpdate {
	c := textBlock(string(out))
	return toolCallUpdate{
		SessionUpdate: "tool_call_update",
		ToolCallID:    id,
		Content:       []toolCallContent{{Type: "content", Content: &c}},
	}
}

// maxProgress bounds the live output a card shows: each update resends
// all of it, so it keeps the tail.
const maxProgress = 16 << 10

func appendTail(buf []byte, chunk string) []byte {
	buf = append(buf, chunk...)
	if len(buf) > maxProgress {
		cut := len(buf) - maxProgress
		// Do not split a UTF-8 sequence.
		for cut < len(buf) && buf[cut]&0xC0 == 0x80 {
			cut++
		}
		buf = append([]byte(nil), buf[cut:]...)
	}
	return buf
}
