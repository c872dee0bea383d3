package convo

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
// reply, or the result of one tool call. The store keeps it as one line of
// a session's message log (docs/storage.md).
type Message struct {
	Role      string
	Content   []Block
	Timestamp int64 // Unix milliseconds

	// User messages.
	RequestID string
	Skills    []string

	// Assistant messages.
	Provider     string
	Model        string
	Usage        *Usage
	StopReason   string
	ErrorMessage string

	// Tool results.
	ToolCallID string
	ToolName   string
	IsError    bool
}

// Block is one piece of a message's content.
type Block struct {
	Type string

	// text and thinking
	Text string
	// Signature is the provider's opaque proof of a thinking block, sent back
	// verbatim on later requests (Anthropic requires it). A thinking block
	// with an ID is a reasoning item of the OpenAI Responses API: ID is the
	// item's id and Signature its encrypted content (docs/storage.md).
	Signature string
	// Attachment names the file a text block carries ("file" attachments are
	// text blocks holding a reference label and a JSON object {name, text}),
	// or marks Loop's own context for the model (AttachmentContext).
	Attachment string

	// image
	Data     string // base64, standard encoding
	MimeType string

	// toolCall
	ID        string
	Name      string
	Arguments json.RawMessage
}

// AttachmentContext marks a text block of a user message that Loop added
// for the model: what it should know of the session's context (the date,
// the permission preset, the project's instructions) from that message on.
// Name says which part it is. It is model input, not the user's words:
// Text leaves it out, and front ends do not show it.
const AttachmentContext = "context"

// Usage is the token accounting a provider reports for one reply.
type Usage struct {
	Input       int
	Output      int
	CacheRead   int
	CacheWrite  int
	TotalTokens int
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
