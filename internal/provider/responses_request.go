package provider

import (
	"encoding/json"
	"strings"

	"github.com/loopdev/loop/convo"
)

// responsesRequest is the body of a Responses API request
// (docs/configuration.md, api "openai-responses"). Nothing is stored on
// the provider's side (store: false): every request carries the whole
// history, and the model's reasoning travels in it as encrypted content.
type responsesRequest struct {
	Model             string              `json:"model"`
	Instructions      string              `json:"instructions,omitempty"`
	Input             []any               `json:"input"`
	Tools             []responsesTool     `json:"tools,omitempty"`
	ToolChoice        string              `json:"tool_choice,omitempty"`
	ParallelToolCalls bool                `json:"parallel_tool_calls"`
	Reasoning         *responsesReasoning `json:"reasoning,omitempty"`
	Store             bool                `json:"store"`
	Stream            bool                `json:"stream"`
	Include           []string            `json:"include,omitempty"`
	MaxOutputTokens   int                 `json:"max_output_tokens,omitempty"`
	PromptCacheKey    string              `json:"prompt_cache_key,omitempty"`
}

type responsesReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type responsesTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// Input items.
type (
	responsesMessage struct {
		Type    string          `json:"type"` // "message"
		Role    string          `json:"role"` // "user" or "assistant"
		Content []responsesPart `json:"content"`
	}
	responsesPart struct {
		Type     string `json:"type"` // "input_text", "input_image" or "output_text"
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	responsesFunctionCall struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	responsesFunctionOutput struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	// responsesReasoningItem is a reasoning item sent back. Its id is
	// left out: with store false the provider keeps no item to refer to,
	// and the encrypted content is the reasoning itself.
	responsesReasoningItem struct {
		Type             string                 `json:"type"` // "reasoning"
		Summary          []responsesSummaryPart `json:"summary"`
		EncryptedContent string                 `json:"encrypted_content"`
	}
	responsesSummaryPart struct {
		Type string `json:"type"` // "summary_text"
		Text string `json:"text"`
	}
)

// responsesInclude asks for the reasoning's encrypted content, which is
// what lets the next request carry it without anything stored.
var responsesInclude = []string{"reasoning.encrypted_content"}

func responsesRequestBody(req Request) responsesRequest {
	out := responsesRequest{
		Model:             req.Model,
		Instructions:      req.System,
		Input:             responsesInput(req.Messages, req.Model),
		ParallelToolCalls: true,
		Stream:            true,
		Include:           responsesInclude,
		MaxOutputTokens:   max(req.MaxOutputTokens, 0),
		PromptCacheKey:    req.CacheKey,
	}
	if e := openAIReasoningEffort(req.Effort); e != "" {
		out.Reasoning = &responsesReasoning{Effort: e}
		if e != "none" {
			out.Reasoning.Summary = "auto"
		}
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: toolSchema(t)})
	}
	if len(out.Tools) > 0 {
		out.ToolChoice = "auto"
	}
	return out
}

// responsesInput maps the history to input items. An assistant message
// becomes its items in order: reasoning, text, calls. Thinking is sent
// back only when it is this API's reasoning item (it has an id and
// encrypted content) and the model it came from is the one asked now
// (another model's encrypted reasoning is not its own); thinking from
// other providers is dropped. Images a
// tool returned go in a user message after the outputs, because a
// function_call_output here carries text.
func responsesInput(history []convo.Message, model string) []any {
	out := []any{}
	var toolImages []responsesPart
	flushImages := func() {
		if len(toolImages) > 0 {
			parts := append([]responsesPart{{Type: "input_text", Text: "Images returned by the tool calls above:"}}, toolImages...)
			out = append(out, &responsesMessage{Type: "message", Role: "user", Content: parts})
			toolImages = nil
		}
	}
	for _, m := range wireHistory(history) {
		if m.Role != convo.RoleToolResult {
			flushImages()
		}
		switch m.Role {
		case convo.RoleUser:
			if parts := responsesUserParts(m.Content); len(parts) > 0 {
				out = append(out, &responsesMessage{Type: "message", Role: "user", Content: parts})
			}
		case convo.RoleAssistant:
			out = appendResponsesAssistant(out, m.Content, m.Model == model)
		case convo.RoleToolResult:
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case convo.BlockText:
					text = append(text, b.Text)
				case convo.BlockImage:
					toolImages = append(toolImages, responsesImage(b))
				}
			}
			out = append(out, &responsesFunctionOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: strings.Join(text, "\n")})
		}
	}
	flushImages()
	return out
}

func responsesUserParts(blocks []convo.Block) []responsesPart {
	var parts []responsesPart
	for _, b := range blocks {
		switch b.Type {
		case convo.BlockText:
			if b.Text != "" {
				parts = append(parts, responsesPart{Type: "input_text", Text: b.Text})
			}
		case convo.BlockImage:
			parts = append(parts, responsesImage(b))
		}
	}
	return parts
}

func responsesImage(b convo.Block) responsesPart {
	return responsesPart{Type: "input_image", ImageURL: "data:" + b.MimeType + ";base64," + b.Data}
}

// appendResponsesAssistant appends an assistant message's items. Runs of
// text blocks become one assistant message item, so that the items keep
// the order the model produced them in. Reasoning that nothing followed
// (a reply stopped or cut right after it) is left out: a reasoning item
// is sent only before the output it led to.
func appendResponsesAssistant(out []any, blocks []convo.Block, reasoning bool) []any {
	start := len(out)
	var text strings.Builder
	flushText := func() {
		if text.Len() > 0 {
			out = append(out, &responsesMessage{Type: "message", Role: "assistant", Content: []responsesPart{{Type: "output_text", Text: text.String()}}})
			text.Reset()
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case convo.BlockText:
			text.WriteString(b.Text)
		case convo.BlockThinking:
			if !reasoning || !IsReasoningItem(b) {
				continue
			}
			flushText()
			item := &responsesReasoningItem{Type: "reasoning", Summary: []responsesSummaryPart{}, EncryptedContent: b.Signature}
			if b.Text != "" {
				item.Summary = append(item.Summary, responsesSummaryPart{Type: "summary_text", Text: b.Text})
			}
			out = append(out, item)
		case convo.BlockToolCall:
			flushText()
			out = append(out, &responsesFunctionCall{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: rawArguments(b.Arguments)})
		}
	}
	flushText()
	for len(out) > start {
		if _, ok := out[len(out)-1].(*responsesReasoningItem); !ok {
			break
		}
		out = out[:len(out)-1]
	}
	return out
}

// IsReasoningItem reports whether a thinking block is a reasoning item of
// the Responses API: its ID is the item's id and its Signature the item's
// encrypted content (docs/storage.md, "Reasoning items"). Other APIs cannot read it,
// and only this one is sent it back.
func IsReasoningItem(b convo.Block) bool {
	return b.Type == convo.BlockThinking && b.ID != "" && b.Signature != ""
}
