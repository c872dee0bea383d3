package engine

import (
	"encoding/json"
	"errors"

	"github.com/loopdev/loop/store"
)

// EventKind names what an Event reports. Front ends map each kind to one
// notification of their protocol.
type EventKind string

// The kinds of events, in the order a run usually publishes them.
const (
	EventRunAccepted     EventKind = "run_accepted"
	EventMessage         EventKind = "message"
	EventTool            EventKind = "tool"
	EventQueueChanged    EventKind = "queue_changed"
	EventPromptTiming    EventKind = "prompt_timing"
	EventAgentSettled    EventKind = "agent_settled"
	EventState           EventKind = "state"
	EventSessionsChanged EventKind = "sessions_changed"
)

// Event is one thing that happened in the engine. Payload is one of the
// *Event types below, ready to marshal as the notification's params.
type Event struct {
	Kind      EventKind
	SessionID string
	Payload   any
}

// RunAcceptedEvent: a prompt, a dispatched queue item or a resume started a run.
type RunAcceptedEvent struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
	RequestID string `json:"requestId,omitempty"`
	Resumed   bool   `json:"resumed,omitempty"`
	// SteeredInto names the running run a steered input joined; it settles
	// with that run.
	SteeredInto string `json:"steeredInto,omitempty"`
}

// MessageEvent streams one history message: "start", then (assistant only)
// "delta" pieces, then "end" with the whole message. A delta carries only
// the new text, never the message again.
type MessageEvent struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId,omitempty"`
	MessageID string `json:"messageId"`
	Event     string `json:"event"`
	// start: the message's role and its index in the history.
	Role  string `json:"role,omitempty"`
	Index *int   `json:"index,omitempty"`
	// delta: which content block grows, its type (text, thinking, toolCall
	// when a tool call block opens, toolArgs for argument JSON) and the piece.
	Block      *int   `json:"block,omitempty"`
	Type       string `json:"type,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	Delta      string `json:"delta,omitempty"`
	// end: the complete message as it enters history.
	Message *store.Message `json:"message,omitempty"`
}

// ToolEvent reports one tool call: "start", "progress" (output so far, as a
// delta) and "end" with its result.
type ToolEvent struct {
	SessionID  string          `json:"sessionId"`
	RunID      string          `json:"runId,omitempty"`
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Event      string          `json:"event"`
	Input      json.RawMessage `json:"input,omitempty"`
	Progress   string          `json:"progress,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Result     []store.Block   `json:"result,omitempty"`
	Details    map[string]any  `json:"details,omitempty"`
}

// QueueChangedEvent carries the whole ordered queue after a change.
type QueueChangedEvent struct {
	SessionID string      `json:"sessionId"`
	Queue     []QueueItem `json:"queue"`
}

// PromptTimingEvent publishes a timing when it starts and when it finishes.
type PromptTimingEvent struct {
	SessionID string             `json:"sessionId"`
	Event     string             `json:"event"` // start or finish
	Timing    store.PromptTiming `json:"timing"`
}

// Outcomes of a settled run.
const (
	OutcomeCompleted = "completed"
	OutcomeError     = "error"
	OutcomeCancelled = "cancelled"
)

// AgentSettledEvent: a run ended.
type AgentSettledEvent struct {
	SessionID string     `json:"sessionId"`
	RunID     string     `json:"runId"`
	RequestID string     `json:"requestId,omitempty"`
	Outcome   string     `json:"outcome"`
	Error     *ErrorInfo `json:"error,omitempty"`
	// SteeredInto: this input was steered into that run and settled with it.
	SteeredInto string `json:"steeredInto,omitempty"`
}

// ErrorInfo is a failure as front ends show it.
type ErrorInfo struct {
	Code    Code        `json:"code"`
	Message string      `json:"message"`
	Errors  []ErrorInfo `json:"errors,omitempty"` // when a run and its save both failed
}

// StateEvent carries a session's complete snapshot after a change outside
// a reply.
type StateEvent struct {
	SessionID string    `json:"sessionId"`
	Snapshot  *Snapshot `json:"snapshot"`
}

// SessionsChangedEvent tells lists that one summary changed or went away.
type SessionsChangedEvent struct {
	WorkspaceID *string  `json:"workspaceId"`
	SessionID   string   `json:"sessionId"`
	Reason      string   `json:"reason"`
	Summary     *Summary `json:"summary,omitempty"`
	Deleted     bool     `json:"deleted,omitempty"`
}

func errorInfo(err error) *ErrorInfo {
	if err == nil {
		return nil
	}
	info := &ErrorInfo{Code: CodeOf(err), Message: err.Error()}
	var e *Error
	if errors.As(err, &e) && len(e.Causes) > 1 {
		for _, c := range e.Causes {
			info.Errors = append(info.Errors, *errorInfo(c))
		}
	}
	return info
}
