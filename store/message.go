package store

import "encoding/json"

// Roles of history messages.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolResult = "toolResult"
)

// Block types inside a message's content.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockImage    = "image"
	BlockToolCall = "toolCall"
)

// Stop reasons of assistant messages.
const (
	StopEnd     = "stop"    // the model finished its answer
	StopLength  = "length"  // the output token limit cut the answer
	StopToolUse = "toolUse" // the model asked for tool calls
	StopError   = "error"   // the provider or the run failed
	StopAborted = "aborted" // the user stopped the run
)

// Message is one entry of a session's history: a user prompt, an assistant
// reply, or the result of one tool call. It is the unit the message log
// stores, one JSON object per line.
type Message struct {
	Role      string  `json:"role"`
	Content   []Block `json:"content"`
	Timestamp int64   `json:"timestamp"` // Unix milliseconds

	// User messages.
	RequestID string   `json:"requestId,omitempty"`
	Skills    []string `json:"skills,omitempty"`

	// Assistant messages.
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	Usage        *Usage `json:"usage,omitempty"`
	StopReason   string `json:"stopReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`

	// Tool results.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

// Block is one piece of a message's content.
type Block struct {
	Type string `json:"type"`

	// text and thinking
	Text string `json:"text,omitempty"`
	// Signature is the provider's opaque proof of a thinking block, sent back
	// verbatim on later requests (Anthropic requires it).
	Signature string `json:"signature,omitempty"`
	// Attachment names the file a text block carries ("file" attachments are
	// text blocks holding a reference label and a JSON object {name, text}).
	Attachment string `json:"attachment,omitempty"`

	// image
	Data     string `json:"data,omitempty"` // base64, standard encoding
	MimeType string `json:"mimeType,omitempty"`

	// toolCall
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Usage is the token accounting a provider reports for one reply.
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead,omitempty"`
	CacheWrite  int `json:"cacheWrite,omitempty"`
	TotalTokens int `json:"totalTokens"`
}

// IsUser reports whether m is a user message. A user message with only
// attachments (images or files, no text) still counts.
func (m *Message) IsUser() bool { return m.Role == RoleUser }

// Text returns the concatenated text blocks of m.
func (m *Message) Text() string {
	var s string
	for _, b := range m.Content {
		if b.Type == BlockText && b.Attachment == "" {
			s += b.Text
		}
	}
	return s
}
