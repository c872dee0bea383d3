package provider

import "github.com/loopdev/loop/convo"

// notExecuted is the result sent for a tool call that has none in the
// history (a run stopped between the call and its result).
const notExecuted = "The tool call was not executed."

// wireHistory repairs what both APIs reject: assistant messages without
// content, tool calls without a result, and results whose call is not in
// the assistant message right before them (for example after compaction).
// Missing results are added as errors; orphan results become user text.
// The input is not modified.
func wireHistory(msgs []convo.Message) []convo.Message {
	out := make([]convo.Message, 0, len(msgs))
	var pending []convo.Block // tool calls of the last assistant message still without result
	flush := func() {
		for _, c := range pending {
			out = append(out, convo.Message{
				Role:       convo.RoleToolResult,
				Content:    []convo.Block{{Type: convo.BlockText, Text: notExecuted}},
				ToolCallID: c.ID,
				ToolName:   c.Name,
				IsError:    true,
			})
		}
		pending = nil
	}
	for _, m := range msgs {
		switch m.Role {
		case convo.RoleToolResult:
			if i := indexOfCall(pending, m.ToolCallID); i >= 0 {
				pending = append(pending[:i:i], pending[i+1:]...)
				out = append(out, m)
				continue
			}
			flush()
			out = append(out, orphanResult(m))
		case convo.RoleAssistant:
			flush()
			if len(m.Content) == 0 {
				continue
			}
			out = append(out, m)
			for _, b := range m.Content {
				if b.Type == convo.BlockToolCall {
					pending = append(pending, b)
				}
			}
		default:
			flush()
			out = append(out, m)
		}
	}
	flush()
	return out
}

func indexOfCall(calls []convo.Block, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// orphanResult turns a tool result without its call into a user message,
// so the model still sees what the tool said.
func orphanResult(m convo.Message) convo.Message {
	label := "Result of tool " + m.ToolName
	if m.IsError {
		label += " (error)"
	}
	content := []convo.Block{{Type: convo.BlockText, Text: label + ":"}}
	content = append(content, m.Content...)
	return convo.Message{Role: convo.RoleUser, Content: content, Timestamp: m.Timestamp}
}
