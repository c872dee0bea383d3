package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/gitsnap"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/search"
)

// Options configure an Engine.
type Options struct {
	// DataRoot is the resolved data directory (store.ResolveDataRoot).
	DataRoot string
	// Demo adds the built-in offline demo model.
	Demo bool
	// Getenv reads provider keys; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient is used by the model providers; nil means a default client.
	HTTPClient *http.Client
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ToolResults, when set, answers tool calls instead of running them
	// (loop replay answers from a trace); ok false runs the tool.
	ToolResults func(sessionID, toolCallID, name string, args json.RawMessage) (res ToolResult, ok bool)
	// NoBackgroundTitles: no session starts a title by itself, whatever
	// config.json says; session/generate_title still makes one. For a host
	// that exits with the answer (loop run), where a background title
	// would be a paid call cut off at exit.
	NoBackgroundTitles bool
	// Sandbox is what the OS sandbox can do here; nil asks the system.
	// Tests set it to see Loop without a sandbox.
	Sandbox *SandboxStatus
	// SandboxHelper is the path of a loop binary, which applies the OS
	// sandbox to a command an editor's terminal runs (docs/acp.md); ""
	// runs such commands in this process instead, where the sandbox
	// applies without a helper.
	SandboxHelper string
	// LetGoWhenIdle: a session holds its write lock only while it has
	// work (a run, a queued input, a pending save, an approval, a
	// command, a title being made), so that another process may continue
	// the conversation meanwhile; before its next write it takes the lock
	// again and picks up what the other committed (engine/letgo.go,
	// docs/cli.md). For the command line; the server keeps the lock of
	// every session it has open.
	LetGoWhenIdle bool
	// DefaultPermission is the preset of a new session when neither its
	// options nor config.json's defaults.permission name one: the
	// interactive chat's is "ask" (docs/cli.md); "" means read-only.
	DefaultPermission string
}

// Engine owns every live session of one process, the model catalog and
// the data root. It knows nothing of the protocol that drives it: front
// ends call its methods and receive its Events.
type Engine struct {
	opts     Options
	root     *store.Root
	search   *search.Index // the root's search index (store/search)
	streamID string
	// log is Options.Logger without the configuration's secrets
	// (RedactLog).
	log *slog.Logger
	// watchers bounds the sessions' watchers of their git working trees
	// (engine/filecheckpoint.go, gitStore).
	watchers *gitsnap.Watchers
	// secrets are the current catalog's, for the log (which may be
	// written with mu held) and the traces' flushers, without mu.
	secrets atomic.Pointer[redact.Set]
	// noJournal turns runs' journals off (engine/journal.go); only the
	// benchmark that measures what the journal costs sets it, in a test
	// build (export_test.go), before any run.
	noJournal bool

	events eventBus

	// builtinTools are the built-in tools as every request carries them,
	// their schemas encoded once (requests share them and never change
	// them; encoding them on each request cost 0.1 ms).
	builtinTools []provider.Tool

	mu        sync.Mutex
	cat       *catalog
	catErr    error // why the config could not be loaded, kept for model/list
	sessions  map[string]*Session
	loading   map[string]*loadCall
	reloading bool
	prefs     *preferences
	closed    bool

	approver Approver
	tokens   turn.Counter
	mcps     map[string]*mcp.Manager // MCP servers by working directory
	// mcpWaited marks server sets whose start-up a request already waited for.
	mcpWaited map[*mcp.Manager]bool
	pruneOnce sync.Once      // trace retention runs once per process
	sweepOnce sync.Once      // so does the sweep of the store's leftovers
	pruning   sync.WaitGroup // those runs, awaited by Shutdown
	// traceNow is the clock traces read, nil for the trace's own (which
	// times a stream's events by one monotonic clock read each): set only
	// when Options.Now was.
	traceNow func() time.Time
}

type loadCall struct {
	done chan struct{}
	s    *Session
	err  error
}

// New makes an engine over opts.DataRoot. It reads config.json but does
// nothing that waits on the network or scans session directories.
func New(opts Options) (*Engine, error) {
	if opts.Getenv == nil {
		opts.Getenv = osGetenv
	}
	traceNow := opts.Now
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	root, err := store.OpenRoot(opts.DataRoot)
	if err != nil {
		return nil, fmt.Errorf("open data root: %w", err)
	}
	e := &Engine{
		opts:     opts,
		root:     root,
		search:   search.New(root), // before any session opens: it observes their commits
		streamID: uuid.Must(uuid.NewV7()).String(),
		watchers: gitsnap.NewWatchers(maxGitWatchers),
		traceNow: traceNow,
		sessions: map[string]*Session{},
		loading:  map[string]*loadCall{},
	}
	e.log = e.RedactLog(opts.Logger)
	if opts.Sandbox == nil {
		st := SandboxStatus(sandbox.Probe())
		e.opts.Sandbox = &st
	}
	if st := e.opts.Sandbox; !st.Available {
		// Said once per engine: without a sandbox workspace-write's
		// bash asks before each command (docs/configuration.md).
		e.log.Warn("the OS sandbox is not available: workspace-write's bash asks before each command, and MCP stdio servers run unsandboxed",
			"reason", st.Reason)
	}
	for _, t := range tools.Builtin() {
		e.builtinTools = append(e.builtinTools, provider.Tool{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	e.prefs = loadPreferences(root.Layout().Preferences())
	cfg, err := LoadConfig(e.configPath())
	if err != nil {
		// A broken config must not stop the server: history still reads,
		// and model/list and prompts explain the problem.
		e.log.Error("config not loaded", "err", err)
		e.catErr = err
		cfg = &Config{}
	}
	cat, err := buildCatalog(cfg, opts, root.Layout())
	if err != nil {
		e.log.Error("providers not loaded", "err", err)
		e.catErr = err
		cat, _ = buildCatalog(&Config{}, opts, root.Layout())
	}
	e.cat = cat
	e.secrets.Store(cat.secrets)
	return e, nil
}

// RedactLog returns l with every secret of the engine's configuration
// (the keys, what baseUrl and header values got from the environment)
// removed from each record, in every spelling, as they are removed from
// model errors and traces (docs/configuration.md, "Keys in errors and
// logs"). The engine's own log is one; a front end gives its own log the
// same treatment.
func (e *Engine) RedactLog(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(redact.Handler(l.Handler(), e.secrets.Load))
}

func (e *Engine) configPath() string { return e.root.Layout().Config() }

// Root is the store under the engine.
func (e *Engine) Root() *store.Root { return e.root }

// StreamID identifies this process's event stream. A prompt that names a
// different one was meant for an earlier process: delivery_unknown.
func (e *Engine) StreamID() string { return e.streamID }

func (e *Engine) now() int64 { return e.opts.Now().UnixMilli() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// catalog returns the current model catalog.
func (e *Engine) catalog() *catalog {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cat
}

// Models lists the configured models in config order.
func (e *Engine) Models() []Model {
	models := e.catalog().models
	out := make([]Model, len(models))
	for i, m := range models {
		out[i] = m.clone()
	}
	return out
}

// ConfigError reports why config.json could not be used, if it could not.
func (e *Engine) ConfigError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.catErr
}

// ReloadConfig re-reads config.json under the global exclusion guard:
// it refuses while runs are active, cancels and drains auxiliary work,
// then swaps the providers. Sessions keep their saved models.
func (e *Engine) ReloadConfig(ctx context.Context) error {
	// Lock order: a session's lock may take the engine's, never the
	// reverse, so sessions are checked outside e.mu.
	e.mu.Lock()
	if e.reloading {
		e.mu.Unlock()
		return errorf(CodeBusy, "a config reload is already running")
	}
	e.reloading = true
	live := e.liveSessionsLocked()
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.reloading = false
		e.mu.Unlock()
		// The reload kept the queues from starting anything: inputs that
		// became startable meanwhile (a hold released, a run settled) start
		// now, whether the reload was refused, failed or succeeded.
		for _, s := range live {
			s.maybeDrainQueue()
		}
	}()
	for _, s := range live {
		if s.busy() {
			return errorf(CodeBusy, "session %s is running; reload when every session is idle", s.id)
		}
	}
	for _, s := range live {
		s.cancelAuxiliary()
	}
	cfg, err := LoadConfig(e.configPath())
	var cat *catalog
	if err == nil {
		cat, err = buildCatalog(cfg, e.opts, e.root.Layout())
	}
	if err != nil {
		// The previous providers stay in service.
		e.mu.Lock()
		e.catErr = err
		e.mu.Unlock()
		return wrapError(CodeConfigError, err, "config/reload kept the previous configuration")
	}
	e.stopMCP("")
	e.mu.Lock()
	e.cat, e.catErr = cat, nil
	e.secrets.Store(cat.secrets)
	e.mu.Unlock()
	for _, s := range live {
		s.publishState()
	}
	return nil
}

func (e *Engine) liveSessionsLocked() []*Session {
	out := make([]*Session, 0, len(e.sessions))
	for _, s := range e.sessions {
		out = append(out, s)
	}
	return out
}

// LiveSessions returns the sessions this process has open.
func (e *Engine) LiveSessions() []*Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.liveSessionsLocked()
}

// errClosed is returned once Shutdown has begun.
var errClosed = errorf(CodeBusy, "the engine is shutting down")

// Workspaces and scopes -------------------------------------------------

// Workspace is a registered project directory.
type Workspace = store.Workspace

// AddWorkspace registers cwd (an existing directory, canonicalized).
func (e *Engine) AddWorkspace(cwd, name string) (Workspace, error) {
	ws, err := e.root.AddWorkspace(cwd, name)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return ws, wrapError(CodeInvalidParams, err, "workspace/add")
		}
		return ws, storageError(err, "workspace/add")
	}
	return ws, nil
}

// Workspaces lists the registered workspaces.
func (e *Engine) Workspaces() ([]Workspace, error) {
	ws, err := e.root.Workspaces()
	return ws, storageError(err, "workspace/list")
}

// RemoveWorkspace cancels and drains the workspace's live sessions, then
// unregisters it. Session files stay on disk.
func (e *Engine) RemoveWorkspace(ctx context.Context, id string) error {
	if _, err := e.root.Workspace(id); err != nil {
		return storageError(err, "workspace/remove")
	}
	var victims []*Session
	for _, s := range e.LiveSessions() {
		if s.workspaceID == id {
			if err := s.admit(kindRemove); err != nil {
				return err
			}
			victims = append(victims, s)
		}
	}
	for _, s := range victims {
		s.dispose(ctx)
	}
	if ws, err := e.root.Workspace(id); err == nil {
		e.stopMCP(ws.Cwd)
	}
	err := e.root.RemoveWorkspace(id)
	// The stopped instances are forgotten either way; after a failure they
	// reopen from disk.
	e.mu.Lock()
	for _, s := range victims {
		if e.sessions[s.id] == s {
			delete(e.sessions, s.id)
		}
	}
	e.mu.Unlock()
	if err != nil {
		return storageError(err, "workspace/remove")
	}
	return nil
}

// checkScope validates a workspace id ("" is the independent collection).
func (e *Engine) checkScope(workspaceID string) (store.Workspace, error) {
	if workspaceID == "" {
		return store.Workspace{}, nil
	}
	ws, err := e.root.Workspace(workspaceID)
	if err != nil {
		return ws, storageError(err, "workspace "+workspaceID)
	}
	return ws, nil
}

// Sessions ---------------------------------------------------------------

// NewSession makes a draft in the workspace (or, for "", an independent
// draft with its own private working directory). Nothing is written until
// its first prompt is committed.
func (e *Engine) NewSession(workspaceID string) (*Session, error) {
	ws, err := e.checkScope(workspaceID)
	if err != nil {
		return nil, err
	}
	model, effort, err := e.newSessionModel()
	if err != nil {
		return nil, err
	}
	cwd := ws.Cwd
	if workspaceID == "" {
		cwd, err = e.root.NewPrivateCwd()
		if err != nil {
			return nil, storageError(err, "private working directory")
		}
	}
	return e.newDraft(workspaceID, cwd, model, effort, e.defaultPermission())
}

// newDraft registers a draft in cwd with its first metadata.
func (e *Engine) newDraft(workspaceID, cwd string, model ModelRef, effort, perm string) (*Session, error) {
	st := e.root.Draft(workspaceID, cwd)
	// A draft's metadata waits in memory for its first commit.
	if err := st.SaveMeta(func(h *store.Header) {
		h.Model = clonePtr(&model)
		h.Effort = effort
		h.Permission = perm
		h.Budget = e.defaultBudget()
	}); err != nil {
		return nil, storageError(err, "session/new")
	}
	s := newSession(e, st)
	e.mu.Lock()
	e.sessions[s.id] = s
	e.mu.Unlock()
	return s, nil
}

// DefaultModel is the model a new session gets (loop models marks it):
// the remembered one, else the config default, else the first configured
// model; no_provider when none is configured.
func (e *Engine) DefaultModel() (ModelRef, error) {
	ref, _, err := e.newSessionModel()
	return ref, err
}

// newSessionModel picks a new session's model: the remembered one, else
// the config default, else the first configured model.
func (e *Engine) newSessionModel() (ModelRef, string, error) {
	cat := e.catalog()
	if len(cat.models) == 0 {
		return ModelRef{}, "", errorf(CodeNoProvider, "no model provider is configured: add one to config.json, set OPENAI_API_KEY or ANTHROPIC_API_KEY, or start loop with --demo")
	}
	if ref, effort, ok := e.prefs.model(); ok {
		if m, ok := cat.find(ref); ok {
			if !m.supportsEffort(effort) {
				effort = EffortDefault
			}
			return ref, effort, nil
		}
	}
	effort := cat.config.Defaults.Effort
	if effort == "" {
		effort = EffortDefault
	}
	if d := cat.config.Defaults.Model; d != nil {
		if m, ok := cat.find(d.Ref()); ok {
			if !m.supportsEffort(effort) {
				effort = EffortDefault
			}
			return d.Ref(), effort, nil
		}
	}
	m := cat.models[0]
	if !m.supportsEffort(effort) {
		effort = EffortDefault
	}
	return m.Ref(), effort, nil
}

func (e *Engine) defaultPermission() string {
	for _, p := range []string{e.catalog().config.Defaults.Permission, e.opts.DefaultPermission} {
		if _, err := tools.ParsePreset(p); err == nil && p != "" {
			return p
		}
	}
	return string(tools.PresetReadOnly)
}

// Session returns the live session id, opening it from disk if needed.
// Concurrent opens of one id share one load and one instance.
func (e *Engine) Session(id string) (*Session, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, errorf(CodeSessionNotFound, "no session %q", id)
	}
	e.mu.Lock()
	if s, ok := e.sessions[id]; ok {
		e.mu.Unlock()
		// A session opened read-only tries its lock again (relock.go).
		return e.relocked(s), nil
	}
	if call, ok := e.loading[id]; ok {
		e.mu.Unlock()
		<-call.done
		return call.s, call.err
	}
	call := &loadCall{done: make(chan struct{})}
	e.loading[id] = call
	e.mu.Unlock()

	call.s, call.err = e.load(id)

	e.mu.Lock()
	delete(e.loading, id)
	if call.err == nil {
		e.sessions[id] = call.s
	}
	e.mu.Unlock()
	close(call.done)
	if call.err == nil {
		// A run a crashed process left is committed by the open; its
		// settlement is published now (engine/journal.go).
		call.s.publishRecovery()
		call.s.letGoIfIdle()
	}
	return call.s, call.err
}

func (e *Engine) load(id string) (*Session, error) {
	wsID, err := e.root.Find(id)
	if errors.Is(err, store.ErrSessionNotFound) && !errors.Is(err, store.ErrUnsupportedFormat) {
		// The store's message repeats the id: say it once.
		return nil, &Error{Code: CodeSessionNotFound, Message: "no session " + id, Causes: []error{err}}
	}
	if err != nil {
		return nil, storageError(err, "session "+id)
	}
	if wsID != "" {
		// History of a workspace no longer registered is out of reach
		// until the workspace is added again.
		if _, err := e.root.Workspace(wsID); err != nil {
			return nil, errorf(CodeSessionNotFound, "session %s belongs to a removed workspace", id)
		}
	}
	st, err := e.root.Open(wsID, id)
	if err != nil {
		return nil, storageError(err, "open session "+id)
	}
	s := newSession(e, st)
	s.findRecoveryFile()
	return s, nil
}

// ScopedSession returns session id after checking that it belongs to the
// workspace the caller named ("" for independent chats).
func (e *Engine) ScopedSession(workspaceID, id string) (*Session, error) {
	if _, err := e.checkScope(workspaceID); err != nil {
		return nil, err
	}
	s, err := e.Session(id)
	if err != nil {
		return nil, err
	}
	if s.workspaceID != workspaceID {
		return nil, errorf(CodeSessionNotFound, "session %s does not belong to that workspace", id)
	}
	return s, nil
}

// List returns the summaries of one scope, newest activity first, with
// live state (isGenerating, approvals) and live first runs merged in.
func (e *Engine) List(workspaceID string, archived bool) ([]Summary, error) {
	if _, err := e.checkScope(workspaceID); err != nil {
		return nil, err
	}
	stored, err := e.root.List(workspaceID, store.ListOptions{Archived: archived})
	if err != nil {
		return nil, storageError(err, "session/list")
	}
	live := map[string]*Session{}
	for _, s := range e.LiveSessions() {
		if s.workspaceID == workspaceID {
			live[s.id] = s
		}
	}
	out := make([]Summary, 0, len(stored))
	seen := map[string]bool{}
	for _, ss := range stored {
		sum := Summary{Summary: ss}
		if s, ok := live[ss.ID]; ok {
			sum = s.Summary()
		}
		if sum.Archived != archived {
			continue
		}
		seen[ss.ID] = true
		out = append(out, sum)
	}
	for id, s := range live {
		if seen[id] {
			continue
		}
		sum := s.Summary()
		// Drafts appear once their first user message is accepted, so the
		// sidebar shows a first run while it streams.
		if sum.Archived == archived && (archived || sum.UserMessageCount > 0) && s.listable() {
			out = append(out, sum)
		}
	}
	sortSummaries(out)
	return out, nil
}

// ListPage is List cut to one page, as PageSummaries cuts it (cursor: the
// nextCursor of the page before; limit 0: everything after it). With a
// limit it reads about limit headers through the store's summary index
// (store.Root.ListPage) instead of every header of the scope; the sessions
// open in this process are merged in as List merges them.
func (e *Engine) ListPage(workspaceID string, archived bool, cursor string, limit int) ([]Summary, string, error) {
	after, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		list, err := e.List(workspaceID, archived)
		if err != nil {
			return nil, "", err
		}
		return PageSummaries(list, cursor, limit)
	}
	if _, err := e.checkScope(workspaceID); err != nil {
		return nil, "", err
	}
	live := map[string]*Session{}
	for _, s := range e.LiveSessions() {
		if s.workspaceID == workspaceID {
			live[s.id] = s
		}
	}
	// Each live session can displace at most one stored entry from the
	// page; one more tells whether a later page exists.
	stored, err := e.root.ListPage(workspaceID, store.PageOptions{Archived: archived, After: after, Limit: limit + len(live) + 1})
	if err != nil {
		return nil, "", storageError(err, "session/list")
	}
	out := make([]Summary, 0, len(stored)+len(live))
	for _, ss := range stored {
		if _, ok := live[ss.ID]; !ok {
			out = append(out, Summary{Summary: ss})
		}
	}
	for _, s := range live {
		sum := s.Summary()
		// As List: a live session is listed where its stored header would
		// be, and a draft once its first user message is accepted.
		onDisk := !s.st.IsDraft() && s.st.Persistent()
		if sum.Archived != archived {
			continue
		}
		if onDisk && (archived || s.st.Summary().UserMessageCount > 0) || (archived || sum.UserMessageCount > 0) && s.listable() {
			out = append(out, sum)
		}
	}
	sortSummaries(out)
	return PageSummaries(out, cursor, limit)
}

// Delete removes one session's history and pin, without loading a model.
// A session whose result the disk refused is not deleted: the error has
// the code pending_save, and session/flush (Session.Flush) saves the
// result first.
func (e *Engine) Delete(ctx context.Context, workspaceID, id string) error {
	if _, err := e.checkScope(workspaceID); err != nil {
		return err
	}
	s, err := e.ScopedSession(workspaceID, id)
	if errors.Is(err, store.ErrCwdMissing) || errors.Is(err, store.ErrMalformed) {
		// Listed but not openable (its cwd is gone, its files are damaged):
		// it can still be deleted, without reading it.
		if werr := e.storedInScope(workspaceID, id); werr != nil {
			return werr
		}
		if err := e.root.DeleteSession(workspaceID, id); err != nil {
			return storageError(err, "delete session")
		}
		e.removeTrace(workspaceID, id)
		e.emit(Event{Kind: EventSessionsChanged, SessionID: id, Payload: &SessionsChangedEvent{
			WorkspaceID: wsPtr(workspaceID), SessionID: id, Reason: "delete", Deleted: true,
		}})
		return nil
	}
	if err != nil {
		return err
	}
	err = s.delete(ctx)
	if err != nil && CodeOf(err) == CodePendingSave {
		// Refused before anything changed: the session stays live.
		return err
	}
	// The stopped instance is forgotten either way: after a failed delete
	// the next use reopens the files that are still there.
	e.forget(s)
	if err != nil {
		return err
	}
	e.emit(Event{Kind: EventSessionsChanged, SessionID: id, Payload: &SessionsChangedEvent{
		WorkspaceID: wsPtr(workspaceID), SessionID: id, Reason: "delete", Deleted: true,
	}})
	return nil
}

// forget drops a closed session from the live ones.
func (e *Engine) forget(s *Session) {
	e.mu.Lock()
	if e.sessions[s.id] == s {
		delete(e.sessions, s.id)
	}
	e.mu.Unlock()
}

// storedInScope checks that a stored session belongs to the scope named.
func (e *Engine) storedInScope(workspaceID, id string) error {
	ws, err := e.root.Find(id)
	if err != nil {
		return storageError(err, "session "+id)
	}
	if ws != workspaceID {
		return errorf(CodeSessionNotFound, "session %s does not belong to that workspace", id)
	}
	return nil
}

// Archive archives or unarchives a session; one that is listed but cannot
// be opened (its cwd is gone, its files are damaged) is archived without
// being read.
func (e *Engine) Archive(workspaceID, id string, archived bool) error {
	s, err := e.ScopedSession(workspaceID, id)
	if errors.Is(err, store.ErrCwdMissing) || errors.Is(err, store.ErrMalformed) {
		if werr := e.storedInScope(workspaceID, id); werr != nil {
			return werr
		}
		if err := e.root.SetSessionArchived(workspaceID, id, archived); err != nil {
			return storageError(err, "archive")
		}
		e.emit(Event{Kind: EventSessionsChanged, SessionID: id, Payload: &SessionsChangedEvent{
			WorkspaceID: wsPtr(workspaceID), SessionID: id, Reason: "archive",
		}})
		return nil
	}
	if err != nil {
		return err
	}
	return s.SetArchived(archived)
}

func wsPtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}
