package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
)

// Each native method is a dispatch.TypedHandler: it takes its params
// decoded into their native type and returns its native result. One
// adapter, dispatch.Typed, decodes (with nativeWording, params.go) and
// replies for all of them; a handler only checks its own fields, calls
// the engine and converts what it returns. What must wait goes to
// dispatch.Defer, off the read loop.

// admission says when a method is served.
type admission int

const (
	always        admission = 1 << iota // also once shutdown has begun: reads, abort, flush, shutdown
	untilShutdown                       // busy once shutdown (the method, exit or a signal) has begun
	unbounded                           // prompt-sized params (text, images, files): no size limit
)

// methodTable binds handlers to the names of native.Methods.
type methodTable struct {
	s     *Server
	specs map[string]native.MethodSpec
	m     map[string]dispatch.Method
}

var unionType = reflect.TypeFor[dispatch.Union]()

// serve binds h to the method name. h's params and result must be the
// types native.Methods gives that name: the table a schema is generated
// from is the table served.
func serve[P, R any](t *methodTable, name string, a admission, h dispatch.TypedHandler[P, R]) {
	spec, ok := t.specs[name]
	if !ok {
		panic(fmt.Sprintf("rpc: %s is not a method of native.Methods", name))
	}
	p, r := reflect.TypeFor[P](), reflect.TypeFor[R]()
	resultOK := r == spec.Result
	if len(spec.OrResults) > 0 {
		resultOK = reflect.PointerTo(r).Implements(unionType)
	}
	if p != spec.Params || !resultOK {
		panic(fmt.Sprintf("rpc: %s is served with params %v and result %v; native.Methods says %v and %v", name, p, r, spec.Params, spec.Result))
	}
	if _, dup := t.m[name]; dup {
		panic("rpc: " + name + " is served twice")
	}
	m := dispatch.Method{Handle: dispatch.Typed(nativeWording{}, h), Unbounded: a&unbounded != 0}
	if a&untilShutdown != 0 {
		m.Admit = t.s.notShuttingDown
	}
	t.m[name] = m
}

// methods is the native dialect's method table (native.Methods), bound to
// this server.
func (s *Server) methods() map[string]dispatch.Method {
	t := &methodTable{s: s, specs: map[string]native.MethodSpec{}, m: map[string]dispatch.Method{}}
	for _, spec := range native.Methods() {
		t.specs[spec.Name] = spec
	}
	serve(t, "initialize", always, s.initialize)
	serve(t, "shutdown", always, s.shutdownMethod)
	serve(t, "workspace/add", untilShutdown, s.workspaceAdd)
	serve(t, "workspace/list", always, s.workspaceList)
	serve(t, "workspace/remove", untilShutdown, s.workspaceRemove)
	serve(t, "model/list", always, s.modelList)
	serve(t, "config/reload", untilShutdown, s.configReload)
	serve(t, "session/list", always, s.sessionList)
	serve(t, "session/new", untilShutdown, s.sessionNew)
	serve(t, "session/get", always, s.sessionGet)
	serve(t, "session/prompt", untilShutdown|unbounded, s.sessionPrompt)
	serve(t, "session/abort", always, s.sessionAbort)
	serve(t, "session/flush", always, s.sessionFlush)
	serve(t, "session/resume", untilShutdown, s.sessionResume)
	serve(t, "session/queue", untilShutdown|unbounded, s.sessionQueue)
	serve(t, "session/set_model", untilShutdown, s.sessionSetModel)
	serve(t, "session/set_title", untilShutdown, s.sessionSetTitle)
	serve(t, "session/generate_title", untilShutdown, s.sessionGenerateTitle)
	serve(t, "session/set_permission", untilShutdown, s.sessionSetPermission)
	serve(t, "session/set_budget", untilShutdown, s.sessionSetBudget)
	serve(t, "session/mark_read", untilShutdown, s.sessionMarkRead)
	serve(t, "session/set_pinned", untilShutdown, s.sessionSetPinned)
	serve(t, "session/archive", untilShutdown, s.sessionArchive)
	serve(t, "session/delete", untilShutdown, s.sessionDelete)
	serve(t, "session/compact", untilShutdown, s.sessionCompact)
	serve(t, "session/search", always, s.sessionSearch)
	serve(t, "skill/list", always, s.skillList)
	serve(t, "session/export", always, s.sessionExport)
	serve(t, "session/import", untilShutdown, s.sessionImport)
	serve(t, "session/restore_files", untilShutdown, s.sessionRestoreFiles)
	serve(t, "session/changes", untilShutdown, s.sessionChanges)
	serve(t, "session/fork", untilShutdown, s.sessionFork)
	serve(t, "session/rewind", untilShutdown, s.sessionRewind)
	serve(t, "session/edit", untilShutdown|unbounded, s.sessionEdit)
	for name := range t.specs {
		if _, ok := t.m[name]; !ok {
			panic("rpc: native method " + name + " has no handler")
		}
	}
	// Any native initialize, even one whose params are refused, settles
	// the dialect: a later one with an integer version does not switch to
	// ACP. So before its params are decoded.
	init := t.m["initialize"]
	decode := init.Handle
	init.Handle = func(c *dispatch.Call) (any, error) {
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
		return decode(c)
	}
	t.m["initialize"] = init
	return t.m
}

// notShuttingDown admits methods until shutdown (the method, exit or a
// signal) has begun.
func (s *Server) notShuttingDown() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return &engine.Error{Code: engine.CodeBusy, Message: "the server is shutting down"}
	}
	return nil
}

// empty is the result of a method that answers {}.
var empty = &native.Empty{}

// done answers {} unless err.
func done(err error) (*native.Empty, error) {
	if err != nil {
		return nil, err
	}
	return empty, nil
}

func (s *Server) initialize(_ context.Context, p *native.InitializeParams) (*native.InitializeResult, error) {
	if len(p.ProtocolVersion) > 0 {
		var v string
		if json.Unmarshal(p.ProtocolVersion, &v) != nil || v != ProtocolVersion {
			return nil, invalidParams("protocolVersion %s is not supported: this server speaks %q (and ACP with an integer version)", p.ProtocolVersion, ProtocolVersion)
		}
	}
	var caps native.ClientCapabilities
	if len(p.Capabilities) > 0 {
		if err := json.Unmarshal(p.Capabilities, &caps); err != nil {
			return nil, invalidParams("capabilities must be an object")
		}
	}
	mode, set := stateAll, caps.StateMessages != nil && string(caps.StateMessages) != "null"
	if set {
		var err error
		if mode, err = parseStateMode(caps.StateMessages); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.initialized = true
	// A repeated initialize without it keeps the earlier choice; a new
	// choice starts every session over (what a false client was sent says
	// nothing of the history it holds).
	if set && mode != s.stateMode {
		s.stateMode = mode
		clear(s.held)
	}
	s.mu.Unlock()
	return initializeResult(s.opts.Version, s.eng.StreamID(), s.stream.Framing().String(), s.eng.Sandbox()), nil
}

// shutdownMethod reads no params: shutdown is never refused for them.
func (s *Server) shutdownMethod(ctx context.Context, _ *native.IgnoredParams) (*native.Empty, error) {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Empty, error) {
		s.settle(ctx, engine.Drain)
		s.mu.Lock()
		err := s.settleErr
		s.mu.Unlock()
		if err != nil {
			return nil, &engine.Error{Code: engine.CodeStorageError, Message: err.Error(), Causes: []error{err}}
		}
		return empty, nil
	})
}

// Workspaces ---------------------------------------------------------------

func (s *Server) workspaceAdd(_ context.Context, p *native.WorkspaceAddParams) (*native.WorkspaceResult, error) {
	if err := required("cwd", p.Cwd); err != nil {
		return nil, err
	}
	ws, err := s.eng.AddWorkspace(p.Cwd, p.Name)
	if err != nil {
		return nil, err
	}
	return workspaceResult(ws), nil
}

func (s *Server) workspaceList(context.Context, *native.NoParams) (*native.WorkspacesResult, error) {
	ws, err := s.eng.Workspaces()
	if err != nil {
		return nil, err
	}
	return workspacesResult(ws), nil
}

func (s *Server) workspaceRemove(ctx context.Context, p *native.WorkspaceRemoveParams) (*native.Empty, error) {
	if err := required("workspaceId", p.WorkspaceID); err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Empty, error) {
		return done(s.eng.RemoveWorkspace(ctx, p.WorkspaceID))
	})
}

// Models -------------------------------------------------------------------

func (s *Server) modelList(context.Context, *native.NoParams) (*native.ModelsResult, error) {
	return modelsResult(s.eng.Models(), s.eng.ConfigError()), nil
}

func (s *Server) configReload(ctx context.Context, _ *native.NoParams) (*native.Empty, error) {
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Empty, error) {
		return done(s.eng.ReloadConfig(ctx))
	})
}

// Sessions -----------------------------------------------------------------

// session returns the live session p names.
func (s *Server) session(p *native.SessionParams) (*engine.Session, error) {
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	return s.eng.Session(p.SessionID)
}

func (s *Server) sessionList(ctx context.Context, p *native.SessionListParams) (*native.SessionsResult, error) {
	var ws string
	if p.Scope != "" && p.WorkspaceID != nil {
		return nil, invalidParams("give workspaceId or scope, not both")
	}
	if p.Scope == "global" {
		ws = ""
	} else if p.Scope != "" && p.Scope != "global" {
		return nil, invalidParams(`scope must be "global"`)
	} else {
		var err error
		if ws, err = resolveScope("workspaceId", p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	archived, err := optionalBool("archived", p.Archived, false)
	if err != nil {
		return nil, err
	}
	limit := 0
	if p.Limit != nil {
		n, err := safeCount("limit", p.Limit)
		if err != nil || n == 0 {
			return nil, invalidParams("limit must be a positive integer")
		}
		limit = n
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.SessionsResult, error) {
		page, next, err := s.eng.ListPage(ws, archived, p.Cursor, limit)
		if err != nil {
			return nil, err
		}
		return sessionsResult(page, next), nil
	})
}

func (s *Server) sessionNew(_ context.Context, p *native.SessionNewParams) (*native.Snapshot, error) {
	ws, err := resolveScope("workspaceId", p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	sess, err := s.eng.NewSession(ws)
	if err != nil {
		return nil, err
	}
	return snapshotResult(sess.Snapshot()), nil
}

func (s *Server) sessionGet(ctx context.Context, p *native.SessionGetParams) (*native.Snapshot, error) {
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	from := 0
	if p.MessagesFrom != nil {
		var err error
		if from, err = safeCount("messagesFrom", p.MessagesFrom); err != nil {
			return nil, err
		}
	}
	id := dispatch.CallOf(ctx).ID
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Snapshot, error) {
		sess, err := s.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		mode := s.stateMode
		s.mu.Unlock()
		if mode == stateAll {
			return snapshotResult(sess.SnapshotFrom(from)), nil
		}
		// A client that follows with false or "delta" holds what this reply
		// carries: queued in order with the session's notifications, it
		// moves the baseline of the next session/state (statemessages.go).
		sess.SnapshotFromInOrder(from, func(snap *engine.Snapshot, h engine.Held) {
			s.mu.Lock()
			if s.stateMode == mode {
				s.held[snap.SessionID] = h
			}
			s.mu.Unlock()
			s.disp.Reply(s.conn, id, snapshotResult(snap))
		})
		return dispatch.Replied[native.Snapshot](ctx)
	})
}

func (s *Server) sessionPrompt(_ context.Context, p *native.SessionPromptParams) (*native.PromptResult, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	if err := required("requestId", p.RequestID); err != nil {
		return nil, err
	}
	files, err := engineFiles(p.Files)
	if err != nil {
		return nil, err
	}
	// The frame holding the text encoded is gone already (dispatch.Typed);
	// the decoded text is handed on, not copied.
	res, err := sess.Prompt(engine.PromptInput{
		RequestID: p.RequestID, Text: string(p.Text), Images: native.EngineImages(p.Images), Files: files, Skills: p.Skills, StreamID: p.StreamID,
		Approver: approver{s},
	})
	if err != nil {
		return nil, err
	}
	return promptResult(res), nil
}

func (s *Server) sessionAbort(ctx context.Context, p *native.SessionParams) (*native.Snapshot, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	// The cancellation happens now, in read order; the wait for cleanup
	// happens off the read loop.
	wait := sess.RequestAbort()
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Snapshot, error) { return snapshotReply(wait(ctx)) })
}

func (s *Server) sessionFlush(ctx context.Context, p *native.SessionParams) (*native.Snapshot, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	// The command lock is taken now, in request order; the write waits.
	finish, err := sess.BeginFlush()
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(context.Context) (*native.Snapshot, error) { return snapshotReply(finish()) })
}

func (s *Server) sessionResume(_ context.Context, p *native.SessionParams) (*native.ResumeResult, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	res, err := sess.ResumeWith(approver{s})
	if err != nil {
		return nil, err
	}
	return resumeResult(res), nil
}

func (s *Server) sessionQueue(_ context.Context, p *native.SessionQueueParams) (*native.QueueResult, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	if err := required("id", p.ID); err != nil {
		return nil, err
	}
	switch p.Action {
	case engine.QueueEdit, engine.QueueMove, engine.QueueDelete, engine.QueueSteer, engine.QueueBeginEdit, engine.QueueCancelEdit:
	case "":
		return nil, invalidParams("action is required")
	default:
		return nil, invalidParams("unknown action %q (edit, move, delete, steer, begin-edit, cancel-edit)", p.Action)
	}
	if p.Action == engine.QueueEdit && p.Text == nil && p.Images == nil && p.Files == nil && p.Skills == nil {
		return nil, invalidParams("edit needs text, images, files or skills")
	}
	files, err := engineFiles(p.Files)
	if err != nil {
		return nil, err
	}
	held, err := sess.Queue(engine.QueueAction{
		ID: p.ID, Action: p.Action, Text: (*string)(p.Text), Images: native.EngineImages(p.Images), Files: files, Skills: p.Skills,
		BeforeID: p.BeforeID, HoldID: p.HoldID,
	})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return &native.QueueResult{Item: queueItemResult(held)}, nil
	}
	return &native.QueueResult{Snapshot: snapshotResult(sess.Snapshot())}, nil
}

func (s *Server) sessionSetModel(_ context.Context, p *native.SessionSetModelParams) (*native.Snapshot, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	if err := required("provider", p.Provider); err != nil {
		return nil, err
	}
	if err := required("id", p.ID); err != nil {
		return nil, err
	}
	// Inline, in request order: a prompt sent after it runs with the new
	// model. It is a header write, never a model call.
	return snapshotReply(sess.SetModel(engine.ModelRef{Provider: p.Provider, ID: p.ID}, p.Effort))
}

func (s *Server) sessionSetTitle(_ context.Context, p *native.SessionSetTitleParams) (*native.Snapshot, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	if p.Title == nil {
		return nil, invalidParams("title is required")
	}
	return snapshotReply(sess.SetTitle(*p.Title))
}

func (s *Server) sessionGenerateTitle(ctx context.Context, p *native.SessionParams) (*native.Snapshot, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	finish, err := sess.BeginGenerateTitle()
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Snapshot, error) { return snapshotReply(finish(ctx)) })
}

func (s *Server) sessionSetPermission(_ context.Context, p *native.SessionSetPermissionParams) (*native.Snapshot, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	if err := required("preset", p.Preset); err != nil {
		return nil, err
	}
	return snapshotReply(sess.SetPermission(p.Preset))
}

// scoped runs a command that names the session's owner scope: it runs
// check on the command's own fields, confirms the session belongs to that
// scope, and runs fn off the read loop.
func scoped[R any](ctx context.Context, s *Server, sp *native.ScopedParams, check func() error, fn func(*engine.Session) (*R, error)) (*R, error) {
	if err := check(); err != nil {
		return nil, err
	}
	if err := required("sessionId", sp.SessionID); err != nil {
		return nil, err
	}
	ws, err := resolveScope("workspaceId", sp.WorkspaceID)
	if err != nil {
		return nil, err
	}
	sess, err := s.eng.ScopedSession(ws, sp.SessionID)
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(context.Context) (*R, error) { return fn(sess) })
}

func (s *Server) sessionMarkRead(ctx context.Context, p *native.SessionMarkReadParams) (*native.MarkReadResult, error) {
	var n int
	return scoped(ctx, s, &p.ScopedParams, func() (err error) {
		n, err = safeCount("messageCount", p.MessageCount)
		return err
	}, func(sess *engine.Session) (*native.MarkReadResult, error) {
		read, err := sess.MarkRead(n)
		if err != nil {
			return nil, err
		}
		return markReadResult(read), nil
	})
}

func (s *Server) sessionSetPinned(ctx context.Context, p *native.SessionSetPinnedParams) (*native.PinnedResult, error) {
	var pinned bool
	return scoped(ctx, s, &p.ScopedParams, func() (err error) {
		pinned, err = strictBool("pinned", p.Pinned)
		return err
	}, func(sess *engine.Session) (*native.PinnedResult, error) {
		at, err := sess.SetPinned(pinned)
		if err != nil {
			return nil, err
		}
		return pinnedResult(at), nil
	})
}

func (s *Server) sessionArchive(ctx context.Context, p *native.SessionArchiveParams) (*native.Empty, error) {
	archived, err := optionalBool("archived", p.Archived, true)
	if err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	ws, err := resolveScope("workspaceId", p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	// Through the engine, so a listed session that cannot be opened (its
	// cwd is gone) can still be archived.
	return dispatch.Defer(ctx, func(context.Context) (*native.Empty, error) {
		return done(s.eng.Archive(ws, p.SessionID, archived))
	})
}

func (s *Server) sessionDelete(ctx context.Context, p *native.ScopedParams) (*native.Empty, error) {
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	ws, err := resolveScope("workspaceId", p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Empty, error) {
		return done(s.eng.Delete(ctx, ws, p.SessionID))
	})
}

func (s *Server) sessionCompact(ctx context.Context, p *native.SessionParams) (*native.Snapshot, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	finish, err := sess.BeginCompact()
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.Snapshot, error) { return snapshotReply(finish(ctx)) })
}

func (s *Server) skillList(_ context.Context, p *native.SkillListParams) (*native.SkillsResult, error) {
	ws := ""
	if p.WorkspaceID != nil {
		var err error
		if ws, err = resolveScope("workspaceId", p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	skills, err := s.eng.Skills(ws)
	if err != nil {
		return nil, err
	}
	return skillsResult(skills), nil
}

// File checkpoints -----------------------------------------------------------

func (s *Server) sessionRestoreFiles(ctx context.Context, p *native.SessionRestoreFilesParams) (*native.RestoreFilesResult, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	n, err := safeCount("messageCount", p.MessageCount)
	if err != nil {
		return nil, err
	}
	force, err := optionalBool("force", p.Force, false)
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.RestoreFilesResult, error) {
		res, err := sess.RestoreFiles(ctx, n, force)
		if err != nil {
			return nil, err
		}
		return native.RestoreFilesResultOf(res), nil
	})
}

func (s *Server) sessionChanges(ctx context.Context, p *native.SessionParams) (*native.ChangesResult, error) {
	sess, err := s.session(p)
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.ChangesResult, error) {
		runs, err := sess.Changes(ctx)
		if err != nil {
			return nil, err
		}
		return native.ChangesResultOf(runs), nil
	})
}
