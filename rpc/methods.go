package rpc

import (
	"context"
	"encoding/json"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
)

// methods is the native dialect's method table, bound to this server.
// Methods not served once shutdown has begun (everything but reads,
// abort, flush and shutdown itself) say busy.
func (s *Server) methods() map[string]dispatch.Method {
	type handler = func(*json.RawMessage) (any, error)
	always := func(fn handler) dispatch.Method { return dispatch.Method{Handle: params(fn)} }
	untilShutdown := func(fn handler) dispatch.Method {
		return dispatch.Method{Handle: params(fn), Admit: s.notShuttingDown}
	}
	// Prompt-sized params (text, images, files) have no size limit.
	unbounded := func(m dispatch.Method) dispatch.Method { m.Unbounded = true; return m }
	return map[string]dispatch.Method{
		"initialize":             always(s.initialize),
		"shutdown":               always(s.shutdownMethod),
		"workspace/add":          untilShutdown(s.workspaceAdd),
		"workspace/list":         always(s.workspaceList),
		"workspace/remove":       untilShutdown(s.workspaceRemove),
		"model/list":             always(s.modelList),
		"config/reload":          untilShutdown(s.configReload),
		"session/list":           always(s.sessionList),
		"session/new":            untilShutdown(s.sessionNew),
		"session/get":            {Handle: s.sessionGet},
		"session/prompt":         unbounded(untilShutdown(s.sessionPrompt)),
		"session/abort":          always(s.sessionAbort),
		"session/flush":          always(s.sessionFlush),
		"session/resume":         untilShutdown(s.sessionResume),
		"session/queue":          unbounded(untilShutdown(s.sessionQueue)),
		"session/set_model":      untilShutdown(s.sessionSetModel),
		"session/set_title":      untilShutdown(s.sessionSetTitle),
		"session/generate_title": untilShutdown(s.sessionGenerateTitle),
		"session/set_permission": untilShutdown(s.sessionSetPermission),
		"session/set_budget":     untilShutdown(s.sessionSetBudget),
		"session/mark_read":      untilShutdown(s.sessionMarkRead),
		"session/set_pinned":     untilShutdown(s.sessionSetPinned),
		"session/archive":        untilShutdown(s.sessionArchive),
		"session/delete":         untilShutdown(s.sessionDelete),
		"session/compact":        untilShutdown(s.sessionCompact),
		"session/search":         always(s.sessionSearch),
		"skill/list":             always(s.skillList),
		"session/export":         always(s.sessionExport),
		"session/import":         untilShutdown(s.sessionImport),
	}
}

// params adapts a native handler, which only reads params, to the
// dispatcher's.
func params(fn func(*json.RawMessage) (any, error)) dispatch.Handler {
	return func(c *dispatch.Call) (any, error) { return fn(c.Params) }
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

// later runs fn off the read loop.
func later(fn func(ctx context.Context) (any, error)) (any, error) { return dispatch.Later(fn) }

type initializeParams struct {
	ClientInfo      json.RawMessage `json:"clientInfo"`
	ProtocolVersion json.RawMessage `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
}

func (s *Server) initialize(raw *json.RawMessage) (any, error) {
	// Any native initialize, even a refused one, settles the dialect: a
	// later one with an integer version does not switch to ACP.
	s.mu.Lock()
	s.initialized = true
	s.mu.Unlock()
	var p initializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if len(p.ProtocolVersion) > 0 {
		var v string
		if json.Unmarshal(p.ProtocolVersion, &v) != nil || v != ProtocolVersion {
			return nil, invalidParams("protocolVersion %s is not supported: this server speaks %q (and ACP with an integer version)", p.ProtocolVersion, ProtocolVersion)
		}
	}
	var caps struct {
		StateMessages json.RawMessage `json:"stateMessages"`
	}
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
	return initializeResult(s.opts.Version, s.eng.StreamID(), s.stream.Framing().String()), nil
}

func (s *Server) shutdownMethod(raw *json.RawMessage) (any, error) {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	return later(func(ctx context.Context) (any, error) {
		s.settle(ctx, engine.Drain)
		s.mu.Lock()
		err := s.settleErr
		s.mu.Unlock()
		if err != nil {
			return nil, &engine.Error{Code: engine.CodeStorageError, Message: err.Error(), Causes: []error{err}}
		}
		return struct{}{}, nil
	})
}

// Workspaces ---------------------------------------------------------------

func (s *Server) workspaceAdd(raw *json.RawMessage) (any, error) {
	var p struct {
		Cwd  string `json:"cwd"`
		Name string `json:"name"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("cwd", p.Cwd); err != nil {
		return nil, err
	}
	ws, err := s.eng.AddWorkspace(p.Cwd, p.Name)
	if err != nil {
		return nil, err
	}
	return workspaceResult(ws), nil
}

func (s *Server) workspaceList(raw *json.RawMessage) (any, error) {
	if err := decodeParams(raw, &struct{}{}); err != nil {
		return nil, err
	}
	ws, err := s.eng.Workspaces()
	if err != nil {
		return nil, err
	}
	return workspacesResult(ws), nil
}

func (s *Server) workspaceRemove(raw *json.RawMessage) (any, error) {
	var p struct {
		WorkspaceID string `json:"workspaceId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("workspaceId", p.WorkspaceID); err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		return struct{}{}, s.eng.RemoveWorkspace(ctx, p.WorkspaceID)
	})
}

// Models -------------------------------------------------------------------

func (s *Server) modelList(raw *json.RawMessage) (any, error) {
	if err := decodeParams(raw, &struct{}{}); err != nil {
		return nil, err
	}
	return modelsResult(s.eng.Models(), s.eng.ConfigError()), nil
}

func (s *Server) configReload(raw *json.RawMessage) (any, error) {
	if err := decodeParams(raw, &struct{}{}); err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		return struct{}{}, s.eng.ReloadConfig(ctx)
	})
}

// Sessions -----------------------------------------------------------------

type sessionParams struct {
	SessionID string `json:"sessionId"`
}

// session decodes params into p (which embeds sessionParams) and returns
// the live session.
func (s *Server) session(raw *json.RawMessage, p interface{ id() string }) (*engine.Session, error) {
	if err := decodeParams(raw, p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.id()); err != nil {
		return nil, err
	}
	return s.eng.Session(p.id())
}

func (p *sessionParams) id() string { return p.SessionID }

func (s *Server) sessionList(raw *json.RawMessage) (any, error) {
	var p struct {
		WorkspaceID scope           `json:"workspaceId"`
		Scope       string          `json:"scope"`
		Archived    json.RawMessage `json:"archived"`
		Limit       json.RawMessage `json:"limit"`
		Cursor      string          `json:"cursor"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	var ws string
	if p.Scope != "" && p.WorkspaceID.raw != nil {
		return nil, invalidParams("give workspaceId or scope, not both")
	}
	if p.Scope == "global" {
		ws = ""
	} else if p.Scope != "" && p.Scope != "global" {
		return nil, invalidParams(`scope must be "global"`)
	} else {
		var err error
		if ws, err = p.WorkspaceID.resolve("workspaceId"); err != nil {
			return nil, err
		}
	}
	archived := false
	if p.Archived != nil {
		var err error
		if archived, err = strictBool("archived", p.Archived); err != nil {
			return nil, err
		}
	}
	limit := 0
	if p.Limit != nil {
		n, err := safeCount("limit", p.Limit)
		if err != nil || n == 0 {
			return nil, invalidParams("limit must be a positive integer")
		}
		limit = n
	}
	return later(func(ctx context.Context) (any, error) {
		page, next, err := s.eng.ListPage(ws, archived, p.Cursor, limit)
		if err != nil {
			return nil, err
		}
		return sessionsResult(page, next), nil
	})
}

func (s *Server) sessionNew(raw *json.RawMessage) (any, error) {
	var p struct {
		WorkspaceID scope `json:"workspaceId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	ws, err := p.WorkspaceID.resolve("workspaceId")
	if err != nil {
		return nil, err
	}
	sess, err := s.eng.NewSession(ws)
	if err != nil {
		return nil, err
	}
	return snapshotResult(sess.Snapshot()), nil
}

func (s *Server) sessionGet(c *dispatch.Call) (any, error) {
	raw := c.Params
	var p struct {
		sessionParams
		MessagesFrom json.RawMessage `json:"messagesFrom"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
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
	return later(func(ctx context.Context) (any, error) {
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
			s.disp.Reply(s.conn, c.ID, snapshotResult(snap))
		})
		return dispatch.ReplyLater()
	})
}

type promptParams struct {
	sessionParams
	RequestID string         `json:"requestId"`
	Text      dispatch.Text  `json:"text"`
	Images    []native.Image `json:"images"`
	Files     []fileParam    `json:"files"`
	Skills    []string       `json:"skills"`
	StreamID  *string        `json:"streamId"`
}

func (s *Server) sessionPrompt(raw *json.RawMessage) (any, error) {
	var p promptParams
	sess, err := s.session(raw, &p)
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
	// The text is decoded: the frame holding it encoded goes now, not once
	// the run that Prompt starts has made its first copies (the trace's
	// record, the commit's line) of a text that may be 50 MB.
	*raw = nil
	res, err := sess.Prompt(engine.PromptInput{
		RequestID: p.RequestID, Text: string(p.Text), Images: native.EngineImages(p.Images), Files: files, Skills: p.Skills, StreamID: p.StreamID,
		Approver: approver{s},
	})
	if err != nil {
		return nil, err
	}
	return promptResult(res), nil
}

func (s *Server) sessionAbort(raw *json.RawMessage) (any, error) {
	var p sessionParams
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	// The cancellation happens now, in read order; the wait for cleanup
	// happens off the read loop.
	wait := sess.RequestAbort()
	return later(func(ctx context.Context) (any, error) { return snapshotReply(wait(ctx)) })
}

func (s *Server) sessionFlush(raw *json.RawMessage) (any, error) {
	var p sessionParams
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	// The command lock is taken now, in request order; the write waits.
	finish, err := sess.BeginFlush()
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) { return snapshotReply(finish()) })
}

func (s *Server) sessionResume(raw *json.RawMessage) (any, error) {
	var p sessionParams
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	res, err := sess.ResumeWith(approver{s})
	if err != nil {
		return nil, err
	}
	return resumeResult(res), nil
}

func (s *Server) sessionQueue(raw *json.RawMessage) (any, error) {
	var p struct {
		sessionParams
		ID       string         `json:"id"`
		Action   string         `json:"action"`
		Text     *dispatch.Text `json:"text"`
		Images   []native.Image `json:"images"`
		Files    []fileParam    `json:"files"`
		Skills   []string       `json:"skills"`
		BeforeID *string        `json:"beforeId"`
		HoldID   string         `json:"holdId"`
	}
	sess, err := s.session(raw, &p)
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
		return queueItemResult(held), nil
	}
	return snapshotResult(sess.Snapshot()), nil
}

func (s *Server) sessionSetModel(raw *json.RawMessage) (any, error) {
	var p struct {
		sessionParams
		Provider string  `json:"provider"`
		ID       string  `json:"id"`
		Effort   *string `json:"effort"`
	}
	sess, err := s.session(raw, &p)
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

func (s *Server) sessionSetTitle(raw *json.RawMessage) (any, error) {
	var p struct {
		sessionParams
		Title *string `json:"title"`
	}
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	if p.Title == nil {
		return nil, invalidParams("title is required")
	}
	return snapshotReply(sess.SetTitle(*p.Title))
}

func (s *Server) sessionGenerateTitle(raw *json.RawMessage) (any, error) {
	var p sessionParams
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	finish, err := sess.BeginGenerateTitle()
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) { return snapshotReply(finish(ctx)) })
}

func (s *Server) sessionSetPermission(raw *json.RawMessage) (any, error) {
	var p struct {
		sessionParams
		Preset string `json:"preset"`
	}
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	if err := required("preset", p.Preset); err != nil {
		return nil, err
	}
	return snapshotReply(sess.SetPermission(p.Preset))
}

// scopedParams are the commands that name the owner scope explicitly.
type scopedParams struct {
	SessionID   string `json:"sessionId"`
	WorkspaceID scope  `json:"workspaceId"`
}

// scoped runs a command that names the session's owner scope: it decodes
// p (which embeds sp), runs check on the command's own fields, confirms
// the session belongs to that scope, and runs fn off the read loop.
func (s *Server) scoped(raw *json.RawMessage, p any, sp *scopedParams, check func() error, fn func(*engine.Session) (any, error)) (any, error) {
	if err := decodeParams(raw, p); err != nil {
		return nil, err
	}
	if err := check(); err != nil {
		return nil, err
	}
	if err := required("sessionId", sp.SessionID); err != nil {
		return nil, err
	}
	ws, err := sp.WorkspaceID.resolve("workspaceId")
	if err != nil {
		return nil, err
	}
	sess, err := s.eng.ScopedSession(ws, sp.SessionID)
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) { return fn(sess) })
}

func (s *Server) sessionMarkRead(raw *json.RawMessage) (any, error) {
	var p struct {
		scopedParams
		MessageCount json.RawMessage `json:"messageCount"`
	}
	var n int
	return s.scoped(raw, &p, &p.scopedParams, func() (err error) {
		n, err = safeCount("messageCount", p.MessageCount)
		return err
	}, func(sess *engine.Session) (any, error) {
		read, err := sess.MarkRead(n)
		if err != nil {
			return nil, err
		}
		return markReadResult(read), nil
	})
}

func (s *Server) sessionSetPinned(raw *json.RawMessage) (any, error) {
	var p struct {
		scopedParams
		Pinned json.RawMessage `json:"pinned"`
	}
	var pinned bool
	return s.scoped(raw, &p, &p.scopedParams, func() (err error) {
		pinned, err = strictBool("pinned", p.Pinned)
		return err
	}, func(sess *engine.Session) (any, error) {
		at, err := sess.SetPinned(pinned)
		if err != nil {
			return nil, err
		}
		return pinnedResult(at), nil
	})
}

func (s *Server) sessionArchive(raw *json.RawMessage) (any, error) {
	var p struct {
		scopedParams
		Archived json.RawMessage `json:"archived"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	archived := true
	if p.Archived != nil {
		var err error
		if archived, err = strictBool("archived", p.Archived); err != nil {
			return nil, err
		}
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	ws, err := p.WorkspaceID.resolve("workspaceId")
	if err != nil {
		return nil, err
	}
	// Through the engine, so a listed session that cannot be opened (its
	// cwd is gone) can still be archived.
	return later(func(ctx context.Context) (any, error) {
		return struct{}{}, s.eng.Archive(ws, p.SessionID, archived)
	})
}

func (s *Server) sessionDelete(raw *json.RawMessage) (any, error) {
	var p scopedParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	ws, err := p.WorkspaceID.resolve("workspaceId")
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		if err := s.eng.Delete(ctx, ws, p.SessionID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	})
}

func (s *Server) sessionCompact(raw *json.RawMessage) (any, error) {
	var p sessionParams
	sess, err := s.session(raw, &p)
	if err != nil {
		return nil, err
	}
	finish, err := sess.BeginCompact()
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) { return snapshotReply(finish(ctx)) })
}

func (s *Server) skillList(raw *json.RawMessage) (any, error) {
	var p struct {
		WorkspaceID scope `json:"workspaceId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	ws := ""
	if p.WorkspaceID.raw != nil {
		var err error
		if ws, err = p.WorkspaceID.resolve("workspaceId"); err != nil {
			return nil, err
		}
	}
	skills, err := s.eng.Skills(ws)
	if err != nil {
		return nil, err
	}
	return skillsResult(skills), nil
}
