package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/loopdev/loop/convo"
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
	// OpRestoreFiles and OpChanges hold the session while file
	// checkpoints are read or put back (engine/filerestore.go).
	OpRestoreFiles = "restore_files"
	OpChanges      = "changes"
	OpFork         = "fork"
	OpRewind       = "rewind"
	OpEdit         = "edit"
)

// Operations lists every operation a session can be in, for those that
// must name them all (the protocol schema's enum, rpc/protocolspec.go);
// TestOperationsListsEveryOpConstant keeps it whole.
func Operations() []string {
	return []string{OpIdle, OpPrompt, OpCompact, OpModel, OpFlush, OpTitle, OpPermission, OpFork, OpRewind, OpEdit, OpRestoreFiles, OpChanges}
}

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

	// Parent is the session this one was forked from and how many of
	// its messages it starts with; nil for a session that is no fork
	// (docs/protocol.md, "Forks and rewinds").
	Parent *store.ParentRef

	// renamed are the history's session-unique tool call ids that differ
	// from the provider's: cut puts them into the messages it copies.
	renamed []store.RenamedCall
}

// State is the session state a snapshot carries (docs/protocol.md 4.10).
type State struct {
	// Messages is the live history: saved messages, then those of a running
	// turn or an unsaved result. MessageCount counts only the saved ones,
	// the count session/mark_read compares. Tool calls and results carry
	// their session-unique ids (store.ToolCallIDs); the stored history and
	// the model keep the provider's.
	Messages []convo.Message
	// MessagesFrom is the history index of Messages[0]: 0 unless the
	// client asked for a tail (Session.SnapshotFrom, SnapshotSince).
	MessagesFrom     int
	MessageCount     int
	UserMessageCount int            // saved user messages
	Streaming        *convo.Message // the live assistant draft, not yet in history
	Unread           bool
	Queue            []QueueItem
	CanResume        bool
	HasPendingSave   bool
	PromptTimings    []store.PromptTiming
	// PromptTimingsFrom is the timing index of PromptTimings[0], on the
	// same terms as MessagesFrom.
	PromptTimingsFrom    int
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
	// Usage is the session's usage ledger, unsaved calls included;
	// Budget its limits (docs/protocol.md, "Usage").
	Usage  convo.SessionUsage
	Budget store.Budget
	// RecoveryFile is the path of a recovery file waiting for this
	// session, "" for none (docs/protocol.md, "Crash recovery").
	RecoveryFile string
	// Recovered is the run the last open of the session recovered from
	// the journal of a process that died in it (docs/storage.md), until
	// the next run is committed; nil when none.
	Recovered *store.RecoveredRun
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

// Held is what a client holds of one session's history and prompt
// timings: how far the previous snapshot it received from SnapshotSince
// reached. The zero Held holds nothing. A front end keeps one per client
// and session, and passes it back for the next snapshot.
type Held struct {
	instance uint64 // the Session the counts are of
	messages int    // history messages held
	timings  int    // prompt timings held
	// open is the first of the trailing unfinished timings held (timings
	// when there are none): a timing may still finish, so it is sent again.
	open int
}

// heldOf is what a client holds once it has base (a snapshotBase of
// session instance inst) and the history and timings before base's.
func heldOf(base *Snapshot, inst uint64) Held {
	st := &base.State
	return Held{instance: inst, messages: st.MessagesFrom + len(st.Messages),
		timings: st.PromptTimingsFrom + len(st.PromptTimings), open: st.PromptTimingsFrom + trailingOpen(st.PromptTimings)}
}

// sessionInstances numbers Session values, so a Held of a session that was
// closed and opened again (its history read anew from disk) is told apart.
var sessionInstances atomic.Uint64

// window is the part of the history and of the prompt timings a snapshot
// copies: from history index messages (none with noMessages), from timing
// index timings.
type window struct {
	messages, timings int
	noMessages        bool
}

// since cuts base (a snapshotBase of session instance inst) for a client
// holding h: what it lacks, given that history messages never change once
// appended, and timings are only appended, except that an unfinished one
// may finish. A Held of another instance, or one that reaches past what the
// session holds, proves nothing, and everything is sent again.
func (base *Snapshot) since(inst uint64, h Held, messages bool) (*Snapshot, Held) {
	st := &base.State
	n := st.MessagesFrom + len(st.Messages)
	nt := st.PromptTimingsFrom + len(st.PromptTimings)
	w := window{noMessages: !messages}
	if h.instance == inst && h.messages <= n && h.timings <= nt {
		w.messages = h.messages
		w.timings = min(h.open, h.timings)
	}
	return cut(base, w), heldOf(base, inst)
}

// cut is the caller's own copy of base with the history and timings from
// w's indexes on (clamped to what base holds), deep-copied; base's other
// fields are copied already.
func cut(base *Snapshot, w window) *Snapshot {
	snap := *base
	st := &snap.State
	if w.noMessages {
		w.messages = st.MessagesFrom + len(st.Messages)
	}
	st.Messages, st.MessagesFrom = cutFrom(st.Messages, st.MessagesFrom, w.messages, cloneMessages)
	store.PublishIDs(st.Messages, st.MessagesFrom, snap.renamed)
	st.PromptTimings, st.PromptTimingsFrom = cutFrom(st.PromptTimings, st.PromptTimingsFrom, w.timings, cloneTimings)
	return &snap
}

// cutFrom is a copy (by clone, never nil) of items, whose first element
// has index from, starting at index at, clamped to what items holds; and
// the index it starts at.
func cutFrom[T any](items []T, from, at int, clone func([]T) []T) ([]T, int) {
	at = min(max(at, from), from+len(items))
	out := clone(items[at-from:])
	if out == nil {
		out = []T{}
	}
	return out, at
}

// trailingOpen is the index of the first of the unfinished timings that end
// the list. An unfinished timing with a finished one after it stays as it
// is (a later prompt started and finished, so that run is over), so only
// the trailing ones can still change.
func trailingOpen(ts []store.PromptTiming) int {
	i := len(ts)
	for i > 0 && !ts[i-1].FinishedAt.Set {
		i--
	}
	return i
}

// timingsFrom is the index of the first of the trailing timings whose
// prompts start at or after history index from: those a client holding
// the history before from still lacks. A timing without a start index (an
// older session's) counts as starting there.
func timingsFrom(ts []store.PromptTiming, from int) int {
	i := len(ts)
	for i > 0 && (!ts[i-1].MessageStartIndex.Set || ts[i-1].MessageStartIndex.Value >= from) {
		i--
	}
	return i
}

// StateEvent carries a session's state after a change outside a reply.
// The event holds the state of its moment without copying the history or
// the timings; Snapshot and SnapshotSince copy only what their caller asks
// for, so a client that holds the history does not cost a copy of it.
type StateEvent struct {
	SessionID string
	base      *Snapshot // history and timings shared (snapshotBase)
	instance  uint64

	once sync.Once
	full *Snapshot
}

// NewStateEvent is the event for a snapshot already built (hosts that
// replay events, tests).
func NewStateEvent(snap *Snapshot) *StateEvent {
	e := &StateEvent{SessionID: snap.SessionID, base: snap, full: snap}
	e.once.Do(func() {})
	return e
}

// Snapshot is the complete snapshot. Every call returns the same value,
// which subscribers share and so must not change.
func (e *StateEvent) Snapshot() *Snapshot {
	e.once.Do(func() { e.full = cut(e.base, window{}) })
	return e.full
}

// SnapshotSince is Session.SnapshotSince at the event's moment: what a
// client holding h lacks, and what it holds after. The messages and timings
// are the caller's own copies; the other fields, like every payload's, are
// shared by the event's subscribers.
func (e *StateEvent) SnapshotSince(h Held, messages bool) (*Snapshot, Held) {
	return e.base.since(e.instance, h, messages)
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
