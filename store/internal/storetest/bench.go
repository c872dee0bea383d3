package storetest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loopdev/loop/convo"
)

// BenchPrompt returns one realistic 6-message prompt: a user request, two
// tool calls with file-sized results, thinking, and a final answer (about
// 4.5 KB of JSON), what the benchmarks of the store and of its search
// index commit.
func BenchPrompt(i int) []convo.Message {
	ts := int64(1795972384000 + i*10000)
	text := func(n int, word string) string { return strings.Repeat(word+" ", n/(len(word)+1)) }
	call := func(id string, k int) convo.Message {
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("internal/pkg%d/file%d.go", i, k)})
		return convo.Message{Role: convo.RoleAssistant, Timestamp: ts + int64(k), Provider: "anthropic", Model: "claude-sonnet", StopReason: convo.StopToolUse,
			Usage: &convo.Usage{Input: 12000 + i, Output: 150, CacheRead: 11000, TotalTokens: 12150 + i},
			Content: []convo.Block{{Type: convo.BlockThinking, Text: text(300, "reasoning"), Signature: strings.Repeat("s", 88)},
				{Type: convo.BlockToolCall, ID: id, Name: "read", Arguments: args}}}
	}
	result := func(id string, k int) convo.Message {
		return convo.Message{Role: convo.RoleToolResult, Timestamp: ts + int64(k), ToolCallID: id, ToolName: "read",
			Content: []convo.Block{{Type: convo.BlockText, Text: text(1500, "func(x int) {\n\treturn x\n}")}}}
	}
	return []convo.Message{
		{Role: convo.RoleUser, Timestamp: ts, RequestID: fmt.Sprintf("req-%d", i), Content: []convo.Block{{Type: convo.BlockText, Text: text(200, "please fix the failing test")}}},
		call(fmt.Sprintf("c%d-1", i), 1), result(fmt.Sprintf("c%d-1", i), 2),
		call(fmt.Sprintf("c%d-2", i), 3), result(fmt.Sprintf("c%d-2", i), 4),
		{Role: convo.RoleAssistant, Timestamp: ts + 5, Provider: "anthropic", Model: "claude-sonnet", StopReason: convo.StopEnd,
			Usage: &convo.Usage{Input: 15000, Output: 400, TotalTokens: 15400}, Content: []convo.Block{{Type: convo.BlockText, Text: text(600, "done")}}},
	}
}
