package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/store"
)

// Operations a session can be in. operation says which command holds the
// session, not whether model text has started arriving.
const (
	OpIdle       = "idle"
	OpPrompt     = "prompt"
	OpCompact    = "compact"
	OpModel      = "model"
	OpFlush      = "flush"
	OpTitle      = "title"
	OpPermission = "permission"
)

// Snapshot is a session's complete state, as session/get returns it. Each
// one is the caller's own deep copy: editing it changes nothing in the
// session or in what a later save writes.
type Snapshot struct {
	SessionID   string
	WorkspaceID *string
	Cwd         string
	// Model is the selected model's identity; ModelInfo is nil when the
	// config no longer has it (history still reads; prompts say model_not_found).
	Model     *ModelRef
	ModelInfo *Model
	Efforts   []string // supported by the model, always with "default"
	Effort    string
	State     State
	Operation string
	RunID     string
	RequestID string
	// Tools projects the running tool calls of the active run.
	Tools        []ToolStatus
	LastApproval *ApprovalOutcome
	Draft        bool // no history file yet
	// MCPServers shows the MCP servers of the session's cwd, with failures.
	MCPServers []mcp.ServerStatus
}

// State is the session state a snapshot carries (docs/protocol.md 4.10).
type State struct {
	// Messages is the live history: saved messages, then those of a running
	// turn or an unsaved result. MessageCount counts only the saved ones,
	// the count session/mark_read compares.
	Messages []store.Message
	// MessagesFrom is the history index of Messages[0]: 0 unless the
	// client asked session/get for a tail (messagesFrom).
	MessagesFrom         int
	MessageCount         int
	UserMessageCount     int            // saved user messages
	Streaming            *store.Message // the live assistant draft, not yet in history
	Unread               bool
	Queue                []QueueItem
	CanResume            bool
	HasPendingSave       bool
	PromptTimings        []store.PromptTiming
	Compaction           *store.CompactionMeta
	CompactionStartedAt  *int64
	PermissionPreset     string
	Title                string
	TitleSource          string
	TitleError           *string
	PinnedAt             *string
	Archived             bool
	AcceptedRequestIDs   []string
	LastError            *ErrorInfo
	IsWaitingForApproval bool
}

// ToolStatus is one tool call of the running turn.
type ToolStatus struct {
	ToolCallID string
	Name       string
	Status     string // running, waiting_approval, done
}

// ApprovalOutcome is the compact record of the latest approval.
type ApprovalOutcome struct {
	ApprovalID string
	Tool       string
	Server     string
	Decision   string // allowed-once, allowed-session, rejected, cancelled
	At         int64
}

// Summary is one entry of session/list: the list fields of the session's
// header (store.Summary) and, for a session open in this process, its live
// state. Sessions not open are summarized from their saved header alone.
type Summary struct {
	store.Summary
	IsGenerating         bool // a prompt run is active in this process
	IsWaitingForApproval bool // an approval request waits for the client
}

// sortSummaries orders a list newest activity first, ids breaking ties
// (v7 ids sort by creation time).
func sortSummaries(list []Summary) {
	slices.SortStableFunc(list, func(a, b Summary) int {
		if a.UpdatedAt != b.UpdatedAt {
			return cmp.Compare(b.UpdatedAt, a.UpdatedAt)
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

// PageSummaries cuts one page from a list sorted by sortSummaries: the
// entries after cursor (the nextCursor of the page before; "" for the
// first page), at most limit of them (0: all). The cursor names a position
// (activity time and id), so sessions that become active meanwhile move to
// the top without shifting the pages still to come.
func PageSummaries(list []Summary, cursor string, limit int) ([]Summary, string, error) {
	start := 0
	after, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if after != nil {
		t, id := after.UpdatedAt, after.ID
		start = len(list)
		for i, s := range list {
			if s.UpdatedAt < t || (s.UpdatedAt == t && s.ID < id) {
				start = i
				break
			}
		}
	}
	page := list[start:]
	if limit <= 0 || limit >= len(page) {
		return page, "", nil
	}
	page = page[:limit]
	last := page[len(page)-1]
	return page, fmt.Sprintf("%d/%s", last.UpdatedAt, last.ID), nil
}

// parseCursor reads a cursor PageSummaries gave ("" is none).
func parseCursor(cursor string) (*store.Position, error) {
	if cursor == "" {
		return nil, nil
	}
	at, id, ok := strings.Cut(cursor, "/")
	t, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, errorf(CodeInvalidParams, "cursor %q is not one this server gave", cursor)
	}
	return &store.Position{UpdatedAt: t, ID: id}, nil
}
