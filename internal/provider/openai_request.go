package provider

import (
	"encoding/json"
	"strings"

	"github.com/loopdev/loop/convo"
)

type openAIRequest struct {
	Model               string              `json:"model"`
	Messages            []openAIMessage     `json:"messages"`
	Tools               []openAITool        `json:"tools,omitempty"`
	Stream              bool                `json:"stream"`
	StreamOptions       openAIStreamOptions `json:"stream_options"`
	MaxCompletionTokens int                 `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
	PromptCacheKey      string              `json:"prompt_cache_key,omitempty"`
}

type openAIStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    any              `json:"content"` // string, []openAIPart, or nil beside tool calls
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openAIPart struct {
	Type     string          `json:"type"` // "text" or "image_url"
	Text     string          `json:"text,omitempty"`
	ImageURL *openAIImageURL `json:"image_url,omitempty"`
}

type openAIImageURL struct {
	URL string `json:"url"`
}

type openAIToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function openAIFunctionCall `json:"function"`
}

type openAIFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema stands in for a tool without a schema: APIs want an object.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func toolSchema(t Tool) json.RawMessage {
	if len(t.Schema) == 0 {
		return emptySchema
	}
	return t.Schema
}

func openAIRequestBody(req Request) openAIRequest {
	out := openAIRequest{
		Model:               req.Model,
		Messages:            openAIMessages(req.System, req.Messages),
		Stream:              true,
		StreamOptions:       openAIStreamOptions{IncludeUsage: true},
		MaxCompletionTokens: max(req.MaxOutputTokens, 0),
		ReasoningEffort:     openAIReasoningEffort(req.Effort),
		PromptCacheKey:      req.CacheKey,
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, openAITool{
			Type:     "function",
			Function: openAIFunction{Name: t.Name, Description: t.Description, Parameters: toolSchema(t)},
		})
	}
	return out
}

// openAIMessages maps the history. Thinking is not sent back: chat
// completions has no field for it, and DeepSeek rejects reasoning_content
// in requests. Images returned by tools go in a user message after the
// tool messages, because tool messages carry text only.
func openAIMessages(system string, history []convo.Message) []openAIMessage {
	var out []openAIMessage
	if system != "" {
		out = append(out, openAIMessage{Role: "system", Content: system})
	}
	var toolImages []openAIPart
	flushImages := func() {
		if len(toolImages) > 0 {
			parts := append([]openAIPart{{Type: "text", Text: "Images returned by the tool calls above:"}}, toolImages...)
			out = append(out, openAIMessage{Role: "user", Content: parts})
			toolImages = nil
		}
	}
	for _, m := range wireHistory(history) {
		if m.Role != convo.RoleToolResult {
			flushImages()
		}
		switch m.Role {
		case convo.RoleUser:
			if c := openAIUserContent(m.Content); c != nil {
				out = append(out, openAIMessage{Role: "user", Content: c})
			}
		case convo.RoleAssistant:
			if am, ok := openAIAssistant(m); ok {
				out = append(out, am)
			}
		case convo.RoleToolResult:
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case convo.BlockText:
					text = append(text, b.Text)
				case convo.BlockImage:
					toolImages = append(toolImages, openAIImage(b))
				}
			}
			out = append(out, openAIMessage{Role: "tool", ToolCallID: m.ToolCallID, Content: strings.Join(text, "\n")})
		}
	}
	flushImages()
	return out
}

// openAIUserContent is a plain string when there are no images (which
// every compatible server accepts), parts otherwise; nil when empty.
func openAIUserContent(blocks []convo.Block) any {
	var text []string
	var parts []openAIPart
	hasImage := false
	for _, b := range blocks {
		switch b.Type {
		case convo.BlockText:
			if b.Text != "" {
				text = append(text, b.Text)
				parts = append(parts, openAIPart{Type: "text", Text: b.Text})
			}
		case convo.BlockImage:
			hasImage = true
			parts = append(parts, openAIImage(b))
		}
	}
	switch {
	case hasImage:
		return parts
	case len(text) > 0:
		return strings.Join(text, "\n\n")
	default:
		return nil
	}
}

func openAIImage(b convo.Block) openAIPart {
	return openAIPart{Type: "image_url", ImageURL: &openAIImageURL{URL: "data:" + b.MimeType + ";base64," + b.Data}}
}

func openAIAssistant(m convo.Message) (openAIMessage, bool) {
	var text strings.Builder
	var calls []openAIToolCall
	for _, b := range m.Content {
		switch b.Type {
		case convo.BlockText:
			text.WriteString(b.Text)
		case convo.BlockToolCall:
			calls = append(calls, openAIToolCall{ID: b.ID, Type: "function", Function: openAIFunctionCall{Name: b.Name, Arguments: rawArguments(b.Arguments)}})
		}
	}
	if text.Len() == 0 && len(calls) == 0 {
		return openAIMessage{}, false
	}
	am := openAIMessage{Role: "assistant", ToolCalls: calls}
	if text.Len() > 0 {
		am.Content = text.String()
	}
	return am, true
}

// rawArguments gives the arguments back as a JSON object. Arguments that
// were not JSON (a cut-off call, a local model's broken output) are stored
// as a JSON string (see normalizeArgs) but go back as {}: servers such as
// Ollama and vLLM parse them and reject the whole request otherwise, and
// the model already read the error result of that call.
func rawArguments(a json.RawMessage) string {
	return string(objectArguments(a))
}
