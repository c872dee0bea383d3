package native

import (
	"bytes"
	"encoding/json"

	"github.com/loopdev/loop/rpc/internal/dispatch"
)

// The params of docs/protocol.md section 5, as the server decodes them
// (rpc/methods.go checks each method's own fields), and what a client
// answers the server's request of section 6. A member tagged omitempty is
// one a client may leave out; the tag never matters to decoding.
//
// Members whose checks encoding/json cannot make decode into the types
// below, which keep the member as it was sent (as json.RawMessage does):
// Scope, Flag and Count, whose checks and wording are package rpc's
// (params.go), and Limit.

// Scope is a workspace id that may be null (independent chats): a string
// or null on the wire. Nil when the member is absent; "null" when null.
type Scope json.RawMessage

// UnmarshalJSON keeps the member as sent.
func (s *Scope) UnmarshalJSON(b []byte) error { return keep((*[]byte)(s), b) }

// Flag is a boolean member: only JSON true or false is accepted (a
// string "true" is refused with the member's name). Nil when absent.
type Flag json.RawMessage

// UnmarshalJSON keeps the member as sent.
func (f *Flag) UnmarshalJSON(b []byte) error { return keep((*[]byte)(f), b) }

// Count is a nonnegative safe integer member (at most 2^53-1), written as
// a JSON integer. Nil when absent.
type Count json.RawMessage

// UnmarshalJSON keeps the member as sent.
func (c *Count) UnmarshalJSON(b []byte) error { return keep((*[]byte)(c), b) }

func keep(dst *[]byte, b []byte) error {
	*dst = append((*dst)[:0:0], b...)
	return nil
}

// Limit is one limit of session/set_budget: a T or null. Absent keeps the
// limit, null clears it, a number sets it (docs/protocol.md).
type Limit[T any] struct {
	present, null bool
	value         T
}

// UnmarshalJSON reads null or a T.
func (l *Limit[T]) UnmarshalJSON(b []byte) error {
	l.present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		l.null = true
		return nil
	}
	return json.Unmarshal(b, &l.value)
}

// Present reports whether the member was sent; Null whether it was null;
// Value is the T it carried.
func (l *Limit[T]) Present() bool { return l.present }

// Null reports whether the member was null.
func (l *Limit[T]) Null() bool { return l.null }

// Value is the limit the member set.
func (l *Limit[T]) Value() T { return l.value }

// NoParams is the params of a method that takes none: an object (or
// absent, or null), whose members are ignored.
type NoParams struct{}

// IgnoredParams is the params of shutdown, which reads none and refuses
// nothing: they are not decoded, not even checked to be an object.
type IgnoredParams = dispatch.Unread

// InitializeParams are initialize's. protocolVersion stays raw: an
// integer there is ACP's (rpc/server.go, isACPInitialize). Capabilities
// are decoded into ClientCapabilities only after protocolVersion is
// checked, so that a wrong version is the error reported first.
type InitializeParams struct {
	ClientInfo      json.RawMessage `json:"clientInfo,omitempty"`
	ProtocolVersion json.RawMessage `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
}

// ClientCapabilities are initialize's capabilities. stateMessages is
// true, false or "delta" (docs/protocol.md, "What session/state carries").
type ClientCapabilities struct {
	StateMessages json.RawMessage `json:"stateMessages,omitempty"`
}

// WorkspaceAddParams are workspace/add's.
type WorkspaceAddParams struct {
	Cwd  string `json:"cwd"`
	Name string `json:"name,omitempty"`
}

// WorkspaceRemoveParams are workspace/remove's.
type WorkspaceRemoveParams struct {
	WorkspaceID string `json:"workspaceId"`
}

// SessionListParams are session/list's.
type SessionListParams struct {
	WorkspaceID Scope  `json:"workspaceId,omitempty"`
	Scope       string `json:"scope,omitempty"`
	Archived    Flag   `json:"archived,omitempty"`
	Limit       Count  `json:"limit,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
}

// SessionNewParams are session/new's.
type SessionNewParams struct {
	WorkspaceID Scope `json:"workspaceId"`
}

// SessionParams name a live session: the params of the methods that take
// nothing else (abort, flush, resume, generate_title, compact), embedded
// in the others'.
type SessionParams struct {
	SessionID string `json:"sessionId"`
}

// SessionGetParams are session/get's.
type SessionGetParams struct {
	SessionParams
	MessagesFrom Count `json:"messagesFrom,omitempty"`
}

// FileParam is a File as a prompt or a queue edit carries it. Text is a
// pointer because it is required: a file without text, or with "text":
// null, is not an empty file (that is "text": "") but a malformed one.
type FileParam struct {
	Name string         `json:"name"`
	Text *dispatch.Text `json:"text"`
}

// SessionPromptParams are session/prompt's. The text and files decode
// into strings of their own size (dispatch.Text).
type SessionPromptParams struct {
	SessionParams
	RequestID string        `json:"requestId"`
	Text      dispatch.Text `json:"text,omitempty"`
	Images    []Image       `json:"images,omitempty"`
	Files     []FileParam   `json:"files,omitempty"`
	Skills    []string      `json:"skills,omitempty"`
	StreamID  *string       `json:"streamId,omitempty"`
}

// SessionQueueParams are session/queue's. Absent text, images, files or
// skills keep the item's; present ones replace them (an edit).
type SessionQueueParams struct {
	SessionParams
	ID       string         `json:"id"`
	Action   string         `json:"action"`
	Text     *dispatch.Text `json:"text,omitempty"`
	Images   []Image        `json:"images,omitempty"`
	Files    []FileParam    `json:"files,omitempty"`
	Skills   []string       `json:"skills,omitempty"`
	BeforeID *string        `json:"beforeId,omitempty"`
	HoldID   string         `json:"holdId,omitempty"`
}

// SessionSetModelParams are session/set_model's. A null or absent effort
// keeps the session's when the model supports it.
type SessionSetModelParams struct {
	SessionParams
	Provider string  `json:"provider"`
	ID       string  `json:"id"`
	Effort   *string `json:"effort,omitempty"`
}

// SessionSetTitleParams are session/set_title's.
type SessionSetTitleParams struct {
	SessionParams
	Title *string `json:"title"`
}

// SessionSetPermissionParams are session/set_permission's.
type SessionSetPermissionParams struct {
	SessionParams
	Preset string `json:"preset"`
}

// SessionSetBudgetParams are session/set_budget's.
type SessionSetBudgetParams struct {
	SessionParams
	SessionTokens Limit[int]     `json:"sessionTokens,omitempty"`
	SessionCost   Limit[float64] `json:"sessionCost,omitempty"`
	PromptTokens  Limit[int]     `json:"promptTokens,omitempty"`
	PromptCost    Limit[float64] `json:"promptCost,omitempty"`
}

// ScopedParams name a session and the scope it belongs to: the params of
// session/delete, embedded in those of the other commands that name the
// owner scope explicitly.
type ScopedParams struct {
	SessionID   string `json:"sessionId"`
	WorkspaceID Scope  `json:"workspaceId"`
}

// SessionMarkReadParams are session/mark_read's.
type SessionMarkReadParams struct {
	ScopedParams
	MessageCount Count `json:"messageCount"`
}

// SessionSetPinnedParams are session/set_pinned's.
type SessionSetPinnedParams struct {
	ScopedParams
	Pinned Flag `json:"pinned"`
}

// SessionArchiveParams are session/archive's; archived defaults to true.
type SessionArchiveParams struct {
	ScopedParams
	Archived Flag `json:"archived,omitempty"`
}

// SessionSearchParams are session/search's.
type SessionSearchParams struct {
	Query        *string `json:"query"`
	WorkspaceID  Scope   `json:"workspaceId,omitempty"`
	Scope        string  `json:"scope,omitempty"`
	Limit        Count   `json:"limit,omitempty"`
	Cursor       string  `json:"cursor,omitempty"`
	IncludeTools Flag    `json:"includeTools,omitempty"`
	Archived     Flag    `json:"archived,omitempty"`
}

// SkillListParams are skill/list's.
type SkillListParams struct {
	WorkspaceID Scope `json:"workspaceId,omitempty"`
}

// SessionExportParams are session/export's.
type SessionExportParams struct {
	SessionParams
	Format string `json:"format"`
}

// SessionImportParams are session/import's.
type SessionImportParams struct {
	Path        string   `json:"path,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	Cwd         string   `json:"cwd,omitempty"`
	WorkspaceID *string  `json:"workspaceId,omitempty"`
}

// ApprovalAnswer is the client's answer to session/request_approval.
type ApprovalAnswer struct {
	Decision string `json:"decision"`
}

// CancelRequest is $/cancelRequest's params: the server withdraws an
// approval request with it, naming the request's string id; a client's
// (whose id may be a number) is ignored.
type CancelRequest struct {
	ID any `json:"id"`
}

// SessionRestoreFilesParams are session/restore_files'.
type SessionRestoreFilesParams struct {
	SessionParams
	MessageCount Count `json:"messageCount"`
	Force        Flag  `json:"force,omitempty"`
}

// SessionForkParams are session/fork's.
type SessionForkParams struct {
	SessionParams
	MessageCount Count   `json:"messageCount"`
	Title        *string `json:"title,omitempty"`
}

// SessionRewindParams are session/rewind's. Files asks for the
// workspace's files back too (absent: false).
type SessionRewindParams struct {
	SessionParams
	MessageCount Count `json:"messageCount"`
	Files        Flag  `json:"files,omitempty"`
}

// SessionEditParams are session/edit's: a prompt, and the user message it
// replaces.
type SessionEditParams struct {
	SessionPromptParams
	UserMessageIndex Count `json:"userMessageIndex"`
}
