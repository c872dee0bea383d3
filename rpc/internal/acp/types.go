package acp

import "encoding/json"

// The wire shapes of ACP v1 that the agent reads and writes, written by
// hand from the schema of @agentclientprotocol/sdk 2.4.0 (schema/v1). Only
// stable v1 fields are sent; unknown fields a client adds are ignored.

// ProtocolVersion is the ACP version the agent speaks.
const ProtocolVersion = 1

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type clientCapabilities struct {
	FS struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs"`
	Terminal bool `json:"terminal"`
}

type initializeParams struct {
	ProtocolVersion    json.RawMessage    `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         *implementation    `json:"clientInfo"`
}

// contentBlock is every ContentBlock variant in one struct; Type says
// which fields apply.
type contentBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// image, audio
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// image (optional), resource_link
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// resource
	Resource *embeddedResource `json:"resource,omitempty"`
}

type embeddedResource struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: s} }

// Session updates -----------------------------------------------------------

type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

type chunkUpdate struct {
	SessionUpdate string       `json:"sessionUpdate"` // user_message_chunk, agent_message_chunk, agent_thought_chunk
	Content       contentBlock `json:"content"`
	MessageID     string       `json:"messageId,omitempty"`
}

// toolCallUpdate serves both tool_call (the first report, Title required)
// and tool_call_update (a patch: nil fields are left as they were).
type toolCallUpdate struct {
	SessionUpdate string             `json:"sessionUpdate,omitempty"`
	ToolCallID    string             `json:"toolCallId"`
	Title         string             `json:"title,omitempty"`
	Kind          string             `json:"kind,omitempty"`
	Status        string             `json:"status,omitempty"`
	Content       []toolCallContent  `json:"content,omitempty"`
	Locations     []toolCallLocation `json:"locations,omitempty"`
	RawInput      json.RawMessage    `json:"rawInput,omitempty"`
}

// toolCallContent is {type:"content", content}, {type:"diff", path,
// oldText, newText} or {type:"terminal", terminalId}.
type toolCallContent struct {
	Type       string        `json:"type"`
	Content    *contentBlock `json:"content,omitempty"`
	Path       string        `json:"path,omitempty"`
	OldText    *string       `json:"oldText,omitempty"`
	NewText    *string       `json:"newText,omitempty"`
	TerminalID string        `json:"terminalId,omitempty"`
}

type toolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

type sessionInfoUpdate struct {
	SessionUpdate string  `json:"sessionUpdate"`
	Title         *string `json:"title,omitempty"`
	UpdatedAt     *string `json:"updatedAt,omitempty"`
}

type usageUpdate struct {
	SessionUpdate string   `json:"sessionUpdate"`
	Used          int      `json:"used"`
	Size          int      `json:"size"`
	Cost          *acpCost `json:"cost,omitempty"`
}

// acpCost is ACP's Cost: the session's cumulative cost. Loop's prices
// carry no currency; ACP needs one, and USD is taken (docs/acp.md).
type acpCost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// acpUsage is ACP's Usage, a prompt response's token usage (unstable in
// the schema, optional).
type acpUsage struct {
	InputTokens       int  `json:"inputTokens"`
	OutputTokens      int  `json:"outputTokens"`
	TotalTokens       int  `json:"totalTokens"`
	CachedReadTokens  *int `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *int `json:"cachedWriteTokens,omitempty"`
}

type currentModeUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	CurrentModeID string `json:"currentModeId"`
}

type configOptionUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	ConfigOptions []configOption `json:"configOptions"`
}

// Modes and config options --------------------------------------------------

type sessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type modeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []sessionMode `json:"availableModes"`
}

type configOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	Category     string         `json:"category,omitempty"`
	Type         string         `json:"type"`
	CurrentValue string         `json:"currentValue"`
	Options      []configSelect `json:"options"`
}

type configSelect struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// modelState is the legacy (pre-configOptions, SDK <= 0.23) model block
// that clients using session/set_model read.
type modelState struct {
	CurrentModelID  string      `json:"currentModelId"`
	AvailableModels []modelInfo `json:"availableModels"`
}

type modelInfo struct {
	ModelID     string `json:"modelId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// sessionSetup is the result of session/new, load and resume.
type sessionSetup struct {
	SessionID     string         `json:"sessionId,omitempty"` // session/new only
	Modes         *modeState     `json:"modes,omitempty"`
	ConfigOptions []configOption `json:"configOptions,omitempty"`
	Models        *modelState    `json:"models,omitempty"`
}

// Permissions ---------------------------------------------------------------

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type requestPermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCallUpdate     `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

type requestPermissionResult struct {
	Outcome struct {
		Outcome  string `json:"outcome"` // cancelled or selected
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// Listing -------------------------------------------------------------------

type sessionInfo struct {
	SessionID string  `json:"sessionId"`
	Cwd       string  `json:"cwd"`
	Title     *string `json:"title,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
}

type listResult struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor *string       `json:"nextCursor,omitempty"`
}

// McpServer as the client describes it; kept as given (see docs/acp.md).
type mcpServer = json.RawMessage
