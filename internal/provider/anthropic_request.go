package provider

import (
	"encoding/json"
	"strings"

	"github.com/loopdev/loop/convo"
)

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    []any              `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []anthropicTool    `json:"tools,omitempty"`
	Thinking  *anthropicThinking `json:"thinking,omitempty"`
	Stream    bool               `json:"stream"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type cacheControl struct {
	Type string `json:"type"`
}

// Content blocks: one type each, because the API requires some empty
// fields (a thinking block's "thinking") and forbids others.
type (
	anthropicText struct {
		Type         string        `json:"type"` // "text"
		Text         string        `json:"text"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	anthropicImage struct {
		Type         string               `json:"type"` // "image"
		Source       anthropicImageSource `json:"source"`
		CacheControl *cacheControl        `json:"cache_control,omitempty"`
	}
	anthropicImageSource struct {
		Type      string `json:"type"` // "base64"
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	anthropicToolUse struct {
		Type         string          `json:"type"` // "tool_use"
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	anthropicToolResult struct {
		Type         string        `json:"type"` // "tool_result"
		ToolUseID    string        `json:"tool_use_id"`
		Content      []any         `json:"content,omitempty"`
		IsError      bool          `json:"is_error,omitempty"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	anthropicThinkingBlock struct {
		Type      string `json:"type"` // "thinking"
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	anthropicRedactedThinking struct {
		Type string `json:"type"` // "redacted_thinking"
		Data string `json:"data"`
	}
)

func anthropicRequestBody(req Request) anthropicRequest {
	maxTokens, budget := anthropicTokens(req.MaxOutputTokens, req.Effort)
	out := anthropicRequest{
		Model:     req.Model,
		MaxTokens: maxTokens,
		Messages:  anthropicMessages(req.Messages),
		Stream:    true,
	}
	if req.System != "" {
		// The cache breakpoint on the system prompt caches tools and
		// system together; the one on the last message caches the history.
		out.System = []any{&anthropicText{Type: "text", Text: req.System, CacheControl: &cacheControl{Type: "ephemeral"}}}
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: toolSchema(t)})
	}
	if budget > 0 && thinkingAllowed(out.Messages) {
		out.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
	}
	markCache(out.Messages)
	return out
}

// thinkingAllowed reports whether extended thinking may be turned on: in
// the middle of a tool loop the API requires the assistant message being
// continued to start with a thinking block, which it lacks when thinking
// was off when it was written.
func thinkingAllowed(msgs []anthropicMessage) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != "user" || len(msgs[n-1].Content) == 0 {
		return true
	}
	if _, ok := msgs[n-1].Content[0].(*anthropicToolResult); !ok {
		return true
	}
	prev := msgs[n-2]
	if prev.Role != "assistant" || len(prev.Content) == 0 {
		return true
	}
	switch prev.Content[0].(type) {
	case *anthropicThinkingBlock, *anthropicRedactedThinking:
		return true
	}
	return false
}

// cacheLookback is how many blocks before a breakpoint the API looks
// for an earlier cache entry (about 20, as Anthropic documents it).
const cacheLookback = 20

// markCache places the message breakpoints (the system prompt holds the
// first of the four the API allows, for the tools and itself): one on the
// last block, which writes the whole request to the cache for the next
// one, and two more 19 and 38 blocks before it. A request reads the cache
// only where the previous one wrote it (its last block) lies at most
// cacheLookback blocks before one of its breakpoints, so a step that adds
// many blocks at once (parallel tool calls, a long run of them) still
// reads the prefix the previous request wrote, up to 57 blocks back.
// Blocks that cannot carry a mark (thinking) pass it to the one before.
func markCache(msgs []anthropicMessage) {
	type pos struct{ m, b int }
	var blocks []pos
	for i := range msgs {
		for j := range msgs[i].Content {
			blocks = append(blocks, pos{i, j})
		}
	}
	next := len(blocks) - 1
	for n := 0; n < 3 && next >= 0; n++ {
		i := next
		for ; i >= 0; i-- {
			if setCache(msgs[blocks[i].m].Content[blocks[i].b]) {
				break
			}
		}
		next = i - (cacheLookback - 1)
	}
}

// setCache marks block b as a breakpoint, if its type can carry one.
func setCache(b any) bool {
	cc := &cacheControl{Type: "ephemeral"}
	switch b := b.(type) {
	case *anthropicText:
		b.CacheControl = cc
	case *anthropicImage:
		b.CacheControl = cc
	case *anthropicToolResult:
		b.CacheControl = cc
	case *anthropicToolUse:
		b.CacheControl = cc
	default:
		return false
	}
	return true
}

// anthropicMessages maps the history. Tool results go in user messages;
// consecutive messages of one role are merged, so that all results of one
// assistant message share one user message, as the API requires.
// Thinking is sent back only with its signature (thinking from another
// provider has none, or is a Responses API reasoning item, and is dropped).
func anthropicMessages(history []convo.Message) []anthropicMessage {
	var out []anthropicMessage
	add := func(role string, content []any) {
		if len(content) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, content...)
			return
		}
		out = append(out, anthropicMessage{Role: role, Content: content})
	}
	for _, m := range wireHistory(history) {
		switch m.Role {
		case convo.RoleUser:
			add("user", anthropicUserBlocks(m.Content))
		case convo.RoleToolResult:
			add("user", []any{&anthropicToolResult{
				Type:      "tool_result",
				ToolUseID: anthropicToolID(m.ToolCallID),
				Content:   anthropicUserBlocks(m.Content),
				IsError:   m.IsError,
			}})
		case convo.RoleAssistant:
			add("assistant", anthropicAssistantBlocks(m.Content))
		}
	}
	return out
}

func anthropicUserBlocks(blocks []convo.Block) []any {
	var out []any
	for _, b := range blocks {
		switch b.Type {
		case convo.BlockText:
			if b.Text != "" {
				out = append(out, &anthropicText{Type: "text", Text: b.Text})
			}
		case convo.BlockImage:
			out = append(out, &anthropicImage{Type: "image", Source: anthropicImageSource{Type: "base64", MediaType: b.MimeType, Data: b.Data}})
		}
	}
	return out
}

func anthropicAssistantBlocks(blocks []convo.Block) []any {
	var out []any
	for _, b := range blocks {
		switch b.Type {
		case convo.BlockText:
			if b.Text != "" {
				out = append(out, &anthropicText{Type: "text", Text: b.Text})
			}
		case convo.BlockThinking:
			switch {
			case IsReasoningItem(b):
				// The Responses API's encrypted reasoning: not a
				// signature Anthropic can check.
			case b.Data != "":
				out = append(out, &anthropicRedactedThinking{Type: "redacted_thinking", Data: b.Data})
			case b.Signature != "":
				out = append(out, &anthropicThinkingBlock{Type: "thinking", Thinking: b.Text, Signature: b.Signature})
			}
		case convo.BlockToolCall:
			out = append(out, &anthropicToolUse{Type: "tool_use", ID: anthropicToolID(b.ID), Name: b.Name, Input: objectArguments(b.Arguments)})
		}
	}
	return out
}

// objectArguments returns a tool call's arguments as the JSON object the
// API requires; arguments that are not an object become {}.
func objectArguments(a json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(a) == 0 || json.Unmarshal(a, &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return a
}

// anthropicToolID makes a tool call id (perhaps from another provider)
// match the API's pattern ^[a-zA-Z0-9_-]+$, the same way for the call and
// its result.
func anthropicToolID(id string) string {
	if id == "" {
		return "call_"
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, id)
}
