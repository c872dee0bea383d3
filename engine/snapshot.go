package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loopdev/loop/engine/mcp"
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
	SessionID   string  `json:"sessionId"`
	WorkspaceID *string `json:"workspaceId"`
	Cwd         string  `json:"cwd"`
	// Model is the selected model's identity; ModelInfo is nil when the
	// config no longer has it (history still reads; prompts say model_not_found).
	Model     *ModelRef `json:"model"`
	ModelInfo *Model    `json:"modelInfo,omitempty"`
	Efforts   []string  `json:"efforts"` // supported by the model, always with "default"
	Effort    string    `json:"effort"`
	State     State     `json:"state"`
	Operation string    `json:"operation"`
	RunID     string    `json:"runId,omitempty"`
	RequestID string    `json:"requestId,omitempty"`
	// Tools projects the running tool calls of the active run.
	Tools        []ToolStatus     `json:"tools"`
	LastApproval *ApprovalOutcome `json:"lastApproval"`
	Draft        bool             `json:"draft"` // no history file yet
	// MCPServers shows the MCP servers of the session's cwd, with failures.
	MCPServers []mcp.ServerStatus `json:"mcpServers"`
}

// State is the SDK state of seed 001's snapshot.
type State struct {
	// Messages is the live history: saved messages, then those of a running
	// turn or an unsaved result. MessageCount counts only the saved ones,
	// the count session/mark_read compares.
	Messages []store.Message `json:"messages"`
	// MessagesFrom is the history index of Messages[0]: 0 unless the
	// client asked session/get for a tail (messagesFrom).
	MessagesFrom         int                   `json:"messagesFrom"`
	MessageCount         int                   `json:"messageCount"`
	UserMessageCount     int                   `json:"userMessageCount"` // saved user messages
	Streaming            *store.Message        `json:"streaming"`        // the live assistant draft, not yet in history
	Unread               bool                  `json:"unread"`
	Queue                []QueueItem           `json:"queue"`
	CanResume            bool                  `json:"canResume"`
	HasPendingSave       bool                  `json:"hasPendingSave"`
	PromptTimings        []store.PromptTiming  `json:"promptTimings"`
	Compaction           *store.CompactionMeta `json:"compaction"`
	CompactionStartedAt  *int64                `json:"compactionStartedAt"`
	PermissionPreset     string                `json:"permissionPreset"`
	Title                string                `json:"title"`
	TitleSource          string                `json:"titleSource"`
	TitleError           *string               `json:"titleError"`
	PinnedAt             *string               `json:"pinnedAt"`
	Archived             bool                  `json:"archived"`
	AcceptedRequestIDs   []string              `json:"acceptedRequestIds"`
	LastError            *ErrorInfo            `json:"lastError"`
	IsWaitingForApproval bool                  `json:"isWaitingForApproval"`
}

// ToolStatus is one tool call of the running turn.
type ToolStatus struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
	Status     string `json:"status"` // running, waiting_approval, done
}

// ApprovalOutcome is the compact record of the latest approval.
type ApprovalOutcome struct {
	ApprovalID string `json:"approvalId"`
	Tool       string `json:"tool"`
	Server     string `json:"server,omitempty"`
	Decision   string `json:"decision"` // allowed-once, allowed-session, rejected, cancelled
	At         int64  `json:"at"`
}

// Summary is one entry of session/list.
type Summary struct {
	ID                   string    `json:"id"`
	WorkspaceID          *string   `json:"workspaceId"`
	Title                string    `json:"title"`
	TitleSource          string    `json:"titleSource"`
	CreatedAt            int64     `json:"createdAt"`
	UpdatedAt            int64     `json:"updatedAt"`
	MessageCount         int       `json:"messageCount"`
	UserMessageCount     int       `json:"userMessageCount"`
	IsGenerating         bool      `json:"isGenerating"`
	IsWaitingForApproval bool      `json:"isWaitingForApproval"`
	Unread               bool      `json:"unread"`
	PinnedAt             *string   `json:"pinnedAt"`
	Archived             bool      `json:"archived"`
	Model                *ModelRef `json:"model"`
}

func summaryFromStore(s store.Summary) Summary {
	out := Summary{
		ID: s.ID, WorkspaceID: s.WorkspaceID, Title: s.Title, TitleSource: s.TitleSource,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, MessageCount: s.MessageCount,
		UserMessageCount: s.UserMessageCount, Unread: s.Unread, PinnedAt: s.PinnedAt, Archived: s.Archived,
	}
	if s.Model != nil {
		out.Model = &ModelRef{Provider: s.Model.Provider, ID: s.Model.ID}
	}
	return out
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
	if cursor != "" {
		at, id, ok := strings.Cut(cursor, "/")
		t, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || id == "" {
			return nil, "", errorf(CodeInvalidParams, "cursor %q is not one this server gave", cursor)
		}
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
