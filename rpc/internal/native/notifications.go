package native

import "encoding/json"

// The params of the notifications of docs/protocol.md section 7.

// RunAccepted is session/run_accepted.
type RunAccepted struct {
	SessionID   string `json:"sessionId"`
	RunID       string `json:"runId"`
	RequestID   string `json:"requestId,omitempty"`
	Resumed     bool   `json:"resumed,omitempty"`
	SteeredInto string `json:"steeredInto,omitempty"`
}

// MessageUpdate is session/message: start, delta or end.
type MessageUpdate struct {
	SessionID  string   `json:"sessionId"`
	RunID      string   `json:"runId,omitempty"`
	MessageID  string   `json:"messageId"`
	Event      string   `json:"event"`
	Role       string   `json:"role,omitempty"`
	Index      *int     `json:"index,omitempty"`
	Block      *int     `json:"block,omitempty"`
	Type       string   `json:"type,omitempty"`
	ToolCallID string   `json:"toolCallId,omitempty"`
	ToolName   string   `json:"toolName,omitempty"`
	Delta      string   `json:"delta,omitempty"`
	Message    *Message `json:"message,omitempty"`
}

// ToolUpdate is session/tool: start, progress or end.
type ToolUpdate struct {
	SessionID  string          `json:"sessionId"`
	RunID      string          `json:"runId,omitempty"`
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Event      string          `json:"event"`
	Input      json.RawMessage `json:"input,omitempty"`
	Progress   string          `json:"progress,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Result     []Block         `json:"result,omitempty"`
	Details    map[string]any  `json:"details,omitempty"`
}

// RetryUpdate is session/retry: a model request failed before its answer
// began and is sent again after delayMs.
type RetryUpdate struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId,omitempty"`
	Attempt   int    `json:"attempt"`
	Of        int    `json:"of"`
	DelayMs   int64  `json:"delayMs"`
	Status    int    `json:"status,omitempty"`
	Message   string `json:"message"`
}

// QueueChanged is session/queue_changed.
type QueueChanged struct {
	SessionID string      `json:"sessionId"`
	Queue     []QueueItem `json:"queue"`
}

// PromptTimingUpdate is session/prompt_timing.
type PromptTimingUpdate struct {
	SessionID string       `json:"sessionId"`
	Event     string       `json:"event"`
	Timing    PromptTiming `json:"timing"`
}

// AgentSettled is session/agent_settled.
type AgentSettled struct {
	SessionID   string     `json:"sessionId"`
	RunID       string     `json:"runId"`
	RequestID   string     `json:"requestId,omitempty"`
	Outcome     string     `json:"outcome"`
	Error       *ErrorInfo `json:"error,omitempty"`
	SteeredInto string     `json:"steeredInto,omitempty"`
}

// StateUpdate is session/state.
type StateUpdate struct {
	SessionID string    `json:"sessionId"`
	Snapshot  *Snapshot `json:"snapshot"`
}

// SessionsChanged is sessions/changed.
type SessionsChanged struct {
	WorkspaceID *string  `json:"workspaceId"`
	SessionID   string   `json:"sessionId"`
	Reason      string   `json:"reason"`
	Summary     *Summary `json:"summary,omitempty"`
	Deleted     bool     `json:"deleted,omitempty"`
}

// Notification is one notification as the server writes it
// (docs/protocol.md "Notifications"): the envelope, whose params are one
// of the types above.
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}
