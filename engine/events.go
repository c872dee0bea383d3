package engine

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/loopdev/loop/convo"
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
	// EventRetry: a model request failed before its answer began and is
	// sent again after a wait (RetryEvent).
	EventRetry EventKind = "retry"
)

// Event is one thing that happened in the engine. Payload is one of the
// *Event types below. They are Go values without JSON tags: each front end
// translates them into its protocol's notification (package rpc's
// NotificationOf for the native dialect, docs/protocol.md).
type Event struct {
	Kind      EventKind
	SessionID string
	Payload   any
}

// RunAcceptedEvent: a prompt, a dispatched queue item or a resume started a run.
type RunAcceptedEvent struct {
	SessionID string
	RunID     string
	RequestID string
	Resumed   bool
	// SteeredInto names the running run a steered input joined; it settles
	// with that run.
	SteeredInto string
}

// MessageEvent streams one history message: "start", then (assistant only)
// "delta" pieces, then "end" with the whole message. A delta carries only
// the new text, never the message again.
type MessageEvent struct {
	SessionID string
	RunID     string
	MessageID string
	Event     string
	// start: the message's role and its index in the history.
	Role  string
	Index *int
	// delta: which content block grows, its type (text, thinking, toolCall
	// when a tool call block opens, toolArgs for argument JSON) and the piece.
	Block      *int
	Type       string
	ToolCallID string
	ToolName   string
	Delta      string
	// end: the complete message as it enters history; for a model reply,
	// Usage is the session's usage ledger after its call (usage.go).
	Message *convo.Message
	Usage   *convo.SessionUsage
}

// ToolEvent reports one tool call: "start", "progress" (output so far, as a
// delta) and "end" with its result. ToolCallID is the call's id unique
// within the session, as snapshots and messages published show it
// (store.ToolCallIDs), not necessarily the provider's.
type ToolEvent struct {
	SessionID  string
	RunID      string
	ToolCallID string
	Name       string
	Event      string
	Input      json.RawMessage
	// AwaitsApproval (start): the call waits for an approval request to be
	// answered before it runs; it runs only if the user allows it.
	AwaitsApproval bool
	Progress       string
	IsError        bool
	Result         []convo.Block
	Details        map[string]any
}

// RetryEvent: a model request of the session failed before any of its
// answer arrived and will be sent again after Delay (the provider's
// backoff, or its Retry-After). Front ends show it, so that the wait is
// not a blank screen: "HTTP 500, retrying in 2 s, attempt 2 of 4".
type RetryEvent struct {
	SessionID string
	RunID     string // "" for a request outside a run (session/compact)
	Attempt   int    // the attempt about to be sent: 2 for the first retry
	Of        int    // the most attempts the request gets
	Delay     time.Duration
	// Status is the failed attempt's HTTP status, 0 when it got none (a
	// refused connection, a stream cut before its first byte).
	Status  int
	Message string // why the attempt failed, without secrets
}

// QueueChangedEvent carries the whole ordered queue after a change.
type QueueChangedEvent struct {
	SessionID string
	Queue     []QueueItem
}

// PromptTimingEvent publishes a timing when it starts and when it finishes.
type PromptTimingEvent struct {
	SessionID string
	Event     string // start or finish
	Timing    store.PromptTiming
}

// Outcomes of a settled run.
const (
	OutcomeCompleted = "completed"
	OutcomeError     = "error"
	OutcomeCancelled = "cancelled"
	// OutcomeInterrupted: the run's process died before its commit; the
	// next open committed what its journal held (engine/journal.go).
	OutcomeInterrupted = "interrupted"
)

// AgentSettledEvent: a run ended.
type AgentSettledEvent struct {
	SessionID string
	RunID     string
	RequestID string
	Outcome   string
	Error     *ErrorInfo
	// SteeredInto: this input was steered into that run and settled with it.
	SteeredInto string
}

// ErrorInfo is a failure as front ends show it.
type ErrorInfo struct {
	Code    Code
	Message string
	Errors  []ErrorInfo // when a run and its save both failed
}

// SessionsChangedEvent tells lists that one summary changed or went away.
type SessionsChangedEvent struct {
	WorkspaceID *string
	SessionID   string
	Reason      string
	Summary     *Summary
	Deleted     bool
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
