package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/gitsnap"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

// Session is one live conversation: its store manager, its history, the
// run that may be active and the inputs waiting behind it. Every method is
// safe for concurrent use; commands that need an idle session say busy.
type Session struct {
	e           *Engine
	id          string
	workspaceID string
	cwd         string
	trace       *trace.Writer // nil: in memory or traces off (trace.go)
	// gitLooked: git says whether cwd is in a repository, and git is
	// which (nil: none), for the file checkpoints of bash
	// (engine/filecheckpoint.go); guarded by mu.
	gitLooked bool
	git       *gitsnap.Repo
	// snaps is the store of the snapshots of git, made at the first
	// use and kept for the session's life: its watcher makes a snapshot
	// of an unchanged working tree cost no git run. snapsClosed: the
	// session closed it (closeGitStore); guarded by mu.
	snaps       *gitsnap.Store
	snapsClosed bool

	mu sync.Mutex
	// state is who holds the session, whether the queue drains and whether
	// the session is closed; it changes only in state.go's transitions.
	state               sessionState
	st                  *store.Session
	history             []convo.Message   // committed, then any unsaved messages of a pending save
	ids                 store.ToolCallIDs // the history's session-unique tool call ids (appendLocked)
	pending             *pendingSave
	streaming           *convo.Message
	draft               *store.DraftCalls  // the ids of streaming's tool calls
	streamText          []*strings.Builder // text of streaming's blocks, by index
	toolStatus          []ToolStatus
	queue               []*QueueItem
	dedup               dedupCache
	titleError          *string
	lastError           *ErrorInfo
	recoveryPublished   bool // publishRecovery ran (engine/journal.go)
	lastApproval        *ApprovalOutcome
	compactionStartedAt *int64
	approvals           map[string]*pendingApproval
	standing            map[string]string // approval answers that hold for the rest of the live session, by tool (approvals.go)
	aux                 auxWork
	cp                  *checkpoint        // latest compaction; an empty one when there is none
	turn                turn.State         // the cached model input, running token sums, the system prompt's and tools' cost (engine/internal/turn)
	usage               convo.SessionUsage // the usage ledger's live totals (usage.go)
	unsaved             convo.SessionUsage // the part of usage no written header holds yet
	clientFS            tools.ClientFS
	clientTerm          tools.ClientTerminal
	ownMCP              *mcp.Manager // servers the front end named for this session
	// ownMCPServers are ownMCP's entries, and ownMCPSandbox the name of
	// the sandbox they run in ("" for none), to start them again when the
	// preset's sandbox changes.
	ownMCPServers map[string]mcp.ServerConfig
	ownMCPSandbox string
	// instance tells this Session apart from an earlier one of the same id
	// (closed, then opened again from disk): a client's Held of that one
	// says nothing about this history.
	instance uint64
	// next replaced this read-only instance when another process had
	// changed the session (relock.go).
	next *Session
	// recoveryFile is a recovery file waiting for this session, "" for
	// none (recoveryfile.go): found when the session opens, set when
	// this process writes one.
	recoveryFile string
	// contextSeen is the latest context part of each name in history
	// (turn.ContextSeen), read up to where the last prompt read it;
	// guarded by mu.
	contextSeen turn.ContextSeen
	// qd orders the writes of queue.json (queuedisk.go).
	qd queueDisk
	// hold is held across a relock and the admission after it, and
	// across a let-go and its check that nothing is to be written
	// (letgo.go): a write queue, outermost of the session's locks.
	hold sync.Mutex
	// agent are the options of this process's agent loop, and offer the
	// tools they let the model see and call (agentoptions.go).
	agent AgentOptions
	offer toolFilter
}

// pendingSave is a finished run's snapshot that the store refused.
type pendingSave struct {
	messages []convo.Message
	edit     func(*store.Header)
	timings  []store.TimingAt // written with the messages
	err      error
	recovery *RecoveryError // the file Shutdown wrote it to, if any
	// journal is the run's journal (store.Journal), retired once a flush
	// saves the run; nil for a session without one.
	journal *store.Journal
}

// activeRun is a run from its admission until its goroutine returns.
type activeRun struct {
	id        string
	requestID string
	cancel    context.CancelFunc
	done      chan struct{}  // closed when the goroutine returns, everything published
	steered   []*QueueItem   // inputs steered into this run; they settle with it
	usage     convo.UsageSum // the run's model calls (usage.go), under the session lock
	// journal records what the run completes (engine/journal.go); nil for
	// an in-memory session, or when it could not be started. Set once at
	// the run's start, under the session lock.
	journal *store.Journal
	// journalErr is why the journal could not be started: the run goes
	// on without one, and refuses to run a tool (engine/journal.go).
	journalErr error
	// files is what the run recorded of its changes to the workspace
	// (engine/filecheckpoint.go); set at its start, then used by the
	// run's goroutine alone.
	files *runFiles
	owed  // its drain, once it let go (releaseRunLocked)
}

func newSession(e *Engine, st *store.Session) *Session {
	h := st.Header()
	s := &Session{
		e:         e,
		id:        st.ID(),
		cwd:       h.Cwd,
		st:        st,
		history:   slices.Clone(st.Messages()),
		approvals: map[string]*pendingApproval{},
		standing:  map[string]string{},
		instance:  sessionInstances.Add(1),
	}
	s.aux.ended = s.letGoAfter
	if h.WorkspaceID != nil {
		s.workspaceID = *h.WorkspaceID
	}
	for i := range s.history {
		s.ids.Add(&s.history[i])
	}
	s.trace = e.newTrace(st)
	if st.Persistent() {
		e.sweepLeftovers()
	}
	s.usage, s.unsaved = openUsage(&h, s.history, e.catalog())
	s.restoreQueueLocked(st.StoredQueue())
	return s
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// WorkspaceID is the owning workspace, "" for an independent chat.
func (s *Session) WorkspaceID() string { return s.workspaceID }

// Cwd is the session's working directory.
func (s *Session) Cwd() string { return s.cwd }

func (s *Session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.busy()
}

func (s *Session) hasPendingSave() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending != nil
}

// listable: drafts join lists once a user message was accepted; in-memory
// sessions never do (lists show what is stored).
func (s *Session) listable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.state.closed && countUsers(s.history) > 0 && s.st.Persistent()
}

func countUsers(msgs []convo.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role == convo.RoleUser {
			n++
		}
	}
	return n
}

// Snapshot returns the session's complete state.
func (s *Session) Snapshot() *Snapshot { return cut(s.snapshotBase(), window{}) }

// SnapshotFrom is Snapshot for a client that already holds the history
// before index from (session/get's messagesFrom): state.messages starts
// there, and state.promptTimings with the first timing of the prompts that
// start at or after it, so that neither grows with what the client holds.
// Every other field is complete.
func (s *Session) SnapshotFrom(from int) *Snapshot {
	base := s.snapshotBase()
	from = min(max(from, 0), len(base.State.Messages))
	return cut(base, window{messages: from, timings: timingsFrom(base.State.PromptTimings, from)})
}

// SnapshotFromInOrder is SnapshotFrom for a front end that follows the
// session with SnapshotSince: deliver gets the snapshot and the Held of a
// client that holds the history before from and then this snapshot, and
// runs under the session's event sequence lock, after every earlier event
// of the session was delivered and before any later one is built. A
// front end that queues the snapshot to its client there, on the path its
// notifications take, may count it as received (docs/protocol.md, "What
// session/state carries"). deliver must only queue.
func (s *Session) SnapshotFromInOrder(from int, deliver func(*Snapshot, Held)) {
	mu := s.e.events.sequencer(s.id)
	mu.Lock()
	defer mu.Unlock()
	base := s.snapshotBase()
	from = min(max(from, 0), len(base.State.Messages))
	deliver(cut(base, window{messages: from, timings: timingsFrom(base.State.PromptTimings, from)}), heldOf(base, s.instance))
}

// SnapshotSince is Snapshot for a client that holds h (what the previous
// snapshot it received carried; the zero Held for none): the messages and
// prompt timings added or changed since, and the Held to pass next time.
// Without messages, state.messages is empty and starts after the history.
func (s *Session) SnapshotSince(h Held, messages bool) (*Snapshot, Held) {
	return s.snapshotBase().since(s.instance, h, messages)
}

// snapshotBase is the session's state with State.Messages sharing the whole
// history and State.PromptTimings all the timings (cut copies what a
// caller asks for of them). Sharing is safe because history messages never
// change once appended and the slice only grows, and the timings are the
// copy store.Session.Header returns (or the pending save's), which nothing
// edits; so a base stays the state of its moment, and nothing long is
// copied under the lock.
func (s *Session) snapshotBase() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}

// snapshotLocked is snapshotBase with s.mu held.
func (s *Session) snapshotLocked() *Snapshot {
	h := s.st.Header()
	snap := &Snapshot{
		renamed:      s.ids.Renamed(),
		SessionID:    s.id,
		WorkspaceID:  wsPtr(s.workspaceID),
		Cwd:          s.cwd,
		Effort:       h.Effort,
		Operation:    s.state.operation(),
		Tools:        slices.Clone(s.toolStatus),
		LastApproval: clonePtr(s.lastApproval),
		Draft:        s.st.IsDraft(),
		Efforts:      []string{EffortDefault},
		MCPServers:   s.mcpStatusLocked(),
		Parent:       h.Parent,
	}
	if r := s.state.run; r != nil {
		snap.RunID, snap.RequestID = r.id, r.requestID
	}
	if snap.Tools == nil {
		snap.Tools = []ToolStatus{}
	}
	if snap.Effort == "" {
		snap.Effort = EffortDefault
	}
	if h.Model != nil {
		ref := *h.Model
		snap.Model = &ref
		if m, ok := s.e.catalog().find(ref); ok {
			m = m.clone()
			snap.ModelInfo = &m
			for _, ef := range Efforts {
				if ef != EffortDefault && slices.Contains(m.Efforts, ef) {
					snap.Efforts = append(snap.Efforts, ef)
				}
			}
		}
	}
	timings := s.timingsLocked()
	n := len(s.history)
	st := State{
		Messages:             s.history[:n:n],
		MessageCount:         len(s.st.Messages()),
		UserMessageCount:     countUsers(s.st.Messages()),
		Unread:               h.Unread,
		Queue:                s.queueView(),
		CanResume:            s.resumableLocked(),
		Recovered:            clonePtr(h.Recovered),
		HasPendingSave:       s.pending != nil,
		PromptTimings:        timings[:len(timings):len(timings)],
		Compaction:           h.Compaction,
		CompactionStartedAt:  clonePtr(s.compactionStartedAt),
		PermissionPreset:     h.Permission,
		Title:                h.Title,
		TitleSource:          h.TitleSource,
		TitleError:           clonePtr(s.titleError),
		PinnedAt:             h.PinnedAt,
		Archived:             h.ArchivedAt != nil,
		AcceptedRequestIDs:   s.dedup.ids(),
		LastError:            cloneErrorInfo(s.lastError),
		IsWaitingForApproval: len(s.approvals) > 0,
		Usage:                s.usage,
		Budget:               h.Budget,
		RecoveryFile:         s.recoveryFile,
	}
	if st.PermissionPreset == "" {
		st.PermissionPreset = string(tools.PresetReadOnly)
	}
	st.Streaming = s.streamingLocked()
	snap.State = st
	return snap
}

// Summary returns the session's list entry, with live state.
func (s *Session) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summaryLocked()
}

func (s *Session) summaryLocked() Summary {
	sum := Summary{
		Summary:      s.st.Summary(),
		IsGenerating: s.state.phase == phaseRunning, IsWaitingForApproval: len(s.approvals) > 0,
	}
	// messageCount is the saved count (what session/mark_read compares);
	// userMessageCount counts accepted user messages, so a first run still
	// streaming lists as a conversation, not a draft.
	sum.MessageCount, sum.UserMessageCount = len(s.st.Messages()), countUsers(s.history)
	sum.Usage = s.usage
	return sum
}

// publishState sends the snapshot to subscribers.
func (s *Session) publishState() {
	s.e.emitWith(s.id, func() Event {
		return Event{Kind: EventState, SessionID: s.id, Payload: &StateEvent{SessionID: s.id, base: s.snapshotBase(), instance: s.instance}}
	})
}

// publishListChange tells lists that this session's summary changed.
func (s *Session) publishListChange(reason string) {
	s.e.emitWith(s.id, func() Event {
		sum := s.Summary()
		return Event{Kind: EventSessionsChanged, SessionID: s.id, Payload: &SessionsChangedEvent{
			WorkspaceID: wsPtr(s.workspaceID), SessionID: s.id, Reason: reason, Summary: &sum,
		}}
	})
}

// beginCommand admits an idle command of kind k and makes it the
// session's holder (state.go). Its release puts the session back to idle
// and drains the queue; the body defers settleCommand with it.
func (s *Session) beginCommand(op string, k kind) (*heldCommand, error) {
	c, err := s.admitCommand(op, k)
	if err != nil {
		// The relock may have taken the lock for nothing.
		s.letGoIfIdle()
	}
	return c, err
}

func (s *Session) admitCommand(op string, k kind) (*heldCommand, error) {
	s.hold.Lock()
	defer s.hold.Unlock()
	s.relock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(k); err != nil {
		return nil, err
	}
	return s.startCommandLocked(op), nil
}

// saveMeta writes header-only metadata through the store's write queue,
// which applies edit to the newest header: a history save and a metadata
// write never lose each other's fields.
func (s *Session) saveMeta(edit func(*store.Header)) error {
	edit, done := s.withUsage(edit)
	err := s.st.SaveMeta(edit)
	done(err)
	if err != nil {
		return storageError(err, "save session metadata")
	}
	return nil
}

// maxTitleRunes bounds a title's length.
const maxTitleRunes = 200

// NormalizeTitle collapses whitespace and bounds the length.
func NormalizeTitle(t string) string {
	t = strings.Join(strings.FieldsFunc(t, unicode.IsSpace), " ")
	if r := []rune(t); len(r) > maxTitleRunes {
		t = strings.TrimSpace(string(r[:maxTitleRunes-1])) + "…"
	}
	return t
}

// SetTitle saves a manual title; it pins the title against automatic
// generation.
func (s *Session) SetTitle(title string) (_ *Snapshot, err error) {
	title = NormalizeTitle(title)
	if title == "" {
		return nil, errorf(CodeInvalidParams, "title is empty")
	}
	c, err := s.beginCommand(OpTitle, kindCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	s.cancelTitleWork()
	err = s.saveMeta(func(h *store.Header) { h.Title, h.TitleSource = title, "manual" })
	s.mu.Lock()
	if err == nil {
		s.titleError = nil
	}
	s.mu.Unlock()
	c.release()
	if err != nil {
		return nil, err
	}
	s.publishState()
	s.publishListChange("title")
	return s.Snapshot(), nil
}

// SetPermission saves a permission preset for later requests.
func (s *Session) SetPermission(preset string) (_ *Snapshot, err error) {
	p, err := tools.ParsePreset(preset)
	if err != nil {
		return nil, wrapError(CodeInvalidParams, err, "preset")
	}
	c, err := s.beginCommand(OpPermission, kindCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	err = s.saveMeta(func(h *store.Header) { h.Permission = string(p) })
	c.release()
	if err != nil {
		return nil, err
	}
	s.restartOwnMCP()
	s.publishState()
	return s.Snapshot(), nil
}

// SetModel switches the model and effort. effort nil keeps the current
// level when the new model supports it, else default.
func (s *Session) SetModel(ref ModelRef, effort *string) (_ *Snapshot, err error) {
	if effort != nil && !slices.Contains(Efforts, *effort) {
		return nil, errorf(CodeInvalidModelEffort, "effort %q is not one of %s", *effort, strings.Join(Efforts, ", "))
	}
	m, ok := s.e.catalog().find(ref)
	if !ok {
		return nil, errorf(CodeModelNotFound, "no model %s/%s is configured", ref.Provider, ref.ID)
	}
	if effort != nil && !m.supportsEffort(*effort) {
		return nil, errorf(CodeInvalidModelEffort, "model %s/%s does not support effort %q", ref.Provider, ref.ID, *effort)
	}
	c, err := s.beginCommand(OpModel, kindSavedCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	next := EffortDefault
	if effort != nil {
		next = *effort
	} else if cur := s.st.Effort(); cur != "" && m.supportsEffort(cur) {
		next = cur
	}
	err = s.saveMeta(func(h *store.Header) {
		h.Model = clonePtr(&ref)
		h.Effort = next
	})
	if err == nil {
		if rerr := s.e.prefs.remember(ref, next); rerr != nil {
			err = storageError(rerr, "remember the model for new sessions")
		}
	}
	c.release()
	if err != nil {
		return nil, err
	}
	s.publishState()
	return s.Snapshot(), nil
}

// MarkRead clears unread when messageCount matches the saved history.
func (s *Session) MarkRead(messageCount int) (bool, error) {
	if messageCount < 0 {
		return false, errorf(CodeInvalidParams, "messageCount must be a nonnegative integer")
	}
	defer s.relockForWrite()()
	if err := s.admit(kindMarkRead); err != nil {
		return false, err
	}
	read, err := s.st.MarkRead(messageCount)
	if err != nil {
		return false, storageError(err, "mark read")
	}
	if read {
		s.publishState()
		s.publishListChange("read")
	}
	return read, nil
}

// SetPinned pins or unpins; it works during a run or an approval wait
// without changing the operation.
func (s *Session) SetPinned(pinned bool) (*string, error) {
	defer s.relockForWrite()()
	at, err := s.st.SetPinned(pinned)
	if err != nil {
		return nil, storageError(err, "pin")
	}
	s.publishState()
	s.publishListChange("pin")
	return at, nil
}

// SetArchived archives or unarchives; files and pins are kept.
func (s *Session) SetArchived(archived bool) error {
	defer s.relockForWrite()()
	err := s.st.SetArchived(archived)
	if err != nil {
		return storageError(err, "archive")
	}
	s.publishState()
	s.publishListChange("archive")
	return nil
}

// delete cancels live work, then removes history and pin. A result the
// disk refused is no part of what it removes: it is refused
// (pending_save), and the session is closed in the same critical section
// as that check, so no result can become pending in between. A run that
// the delete itself stops is deleted with the session, saved or not.
func (s *Session) delete(ctx context.Context) error {
	s.mu.Lock()
	if err := s.admitLocked(kindDelete); err != nil {
		s.mu.Unlock()
		return err
	}
	s.closeLocked()
	s.mu.Unlock()
	s.stop(ctx)
	s.closeGitStore()
	if err := s.st.Delete(); err != nil {
		return storageError(err, "delete session")
	}
	_ = s.st.Close()
	if s.trace != nil {
		s.trace.Close()
	}
	// Also when this session records none (traces off now, or in config
	// edited since): a trace written earlier goes with the session.
	s.e.removeTrace(s.workspaceID, s.id)
	return nil
}

// dispose aborts the run, cancels approvals and auxiliary work, and stops
// the session taking new work.
func (s *Session) dispose(ctx context.Context) {
	s.stop(ctx)
	_ = s.st.Close()
	s.closeGitStore()
	if s.trace != nil {
		s.trace.Close()
	}
}

// stop is dispose without releasing the store.
func (s *Session) stop(ctx context.Context) {
	// Closed first: a command that lets go during the abort must not
	// dispatch a queued input into a session being shut down.
	s.mu.Lock()
	s.closeLocked()
	s.mu.Unlock()
	wait := s.RequestAbort()
	_, _ = wait(ctx)
	s.cancelAuxiliary()
	s.mu.Lock()
	s.queue = nil
	own := s.ownMCP
	s.ownMCP = nil
	s.mu.Unlock()
	if own != nil {
		_ = own.Close()
		s.e.mu.Lock()
		delete(s.e.mcpWaited, own)
		s.e.mu.Unlock()
	}
}
