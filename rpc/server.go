// Package rpc is Loop's JSON-RPC front: it translates between the wire
// (package wire's framing and outbox, sourcegraph/jsonrpc2's connection)
// and the engine. It is the only package that knows JSON-RPC; it owns no
// session state of its own.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/acp"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/loopdev/loop/store"
	"github.com/sourcegraph/jsonrpc2"
)

// ProtocolVersion is the native dialect's version string.
const ProtocolVersion = "loop/1"

// Options configure a Server.
type Options struct {
	Framing wire.Framing
	// OnEOF says what happens to running work when stdin closes.
	OnEOF engine.ShutdownMode
	// Version is reported in initialize's serverInfo.
	Version string
	Logger  *slog.Logger
	// ACP speaks the Agent Client Protocol from the start; without it the
	// dialect switches to ACP when the first initialize carries an integer
	// protocolVersion.
	ACP bool
}

// Server serves one connection for one engine.
type Server struct {
	eng  *engine.Engine
	opts Options
	log  *slog.Logger

	conn   *jsonrpc2.Conn
	stream *wire.Stream
	// ready is closed once conn is set: jsonrpc2 starts reading (and
	// calling Handle) inside NewConn, before it returns.
	ready chan struct{}

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	inflight    inflight // deferred halves of requests still to be answered

	// Settling (engine shutdown) happens once; every caller waits for it.
	settleOnce sync.Once
	settleDone chan struct{}
	settleErr  error
	pending    map[string]context.CancelFunc // approval requests in flight, by request id
	acp        *acp.Agent                    // set once the dialect is ACP
	// stateWithoutMessages: the client asked (capabilities.stateMessages:
	// false) for session/state snapshots without the history, which it
	// follows through session/message and fetches with session/get.
	stateWithoutMessages bool
	// inputClosed ends when stdin does: approvals cannot be answered after.
	inputClosed context.Context
	inputDone   context.CancelFunc
}

// NewServer makes a server for eng.
func NewServer(eng *engine.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{eng: eng, opts: opts, log: opts.Logger, pending: map[string]context.CancelFunc{}, ready: make(chan struct{}), settleDone: make(chan struct{})}
	s.inputClosed, s.inputDone = context.WithCancel(context.Background())
	return s
}

// Serve speaks JSON-RPC over r and w until the input ends (EOF) or ctx is
// cancelled (a signal). Either way running work is settled and saved
// first. It returns engine.Unsaved: non-nil means some session's result
// could only be written to a recovery file.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.stream = wire.New(r, w, wire.Options{
		Framing: s.opts.Framing,
		Merger: func(prev, next *wire.Outgoing) bool {
			return wire.MergeDeltas(prev, next) || acp.MergeChunks(prev, next)
		},
		OnEOF: func(ctx context.Context) {
			// stdin closed: nobody can answer an approval any more, so
			// waiting ones are rejected; answer what was read, then drain
			// or abort.
			s.inputDone()
			a := s.dialectACP()
			if a != nil {
				a.InputClosed()
			}
			if s.opts.OnEOF == engine.Abort {
				// Abort first, so deferred requests (a compaction, a title)
				// are cancelled rather than waited for.
				s.settle(ctx, engine.Abort)
				s.inflight.wait()
			} else {
				s.inflight.wait()
				if a != nil {
					a.Wait()
				}
				s.settle(ctx, engine.Drain)
			}
			if a != nil {
				// Prompts no run will settle any more get their answer.
				a.CancelPending()
			}
		},
	})
	s.conn = jsonrpc2.NewConn(context.Background(), s.stream, s, jsonrpc2.SetLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)))
	unsub := s.eng.Subscribe(s.notify)
	defer unsub()
	if s.opts.ACP {
		s.useACP()
	} else {
		s.eng.SetApprover(approver{s})
	}
	close(s.ready)
	defer func() {
		if a := s.dialectACP(); a != nil {
			a.Close()
		}
	}()

	select {
	case <-s.conn.DisconnectNotify():
	case <-ctx.Done():
		// A signal: abort running work, commit, then close.
		s.closeAbort()
	}
	// jsonrpc2 reports the disconnect before its stream is closed: close it
	// here too, which waits until every queued reply is written.
	_ = s.stream.Close()
	// Not settleErr: a session/flush after shutdown may have saved what
	// settling could only write to a recovery file.
	return s.eng.Unsaved()
}

// closeAbort ends the connection the hard way (a signal, the exit
// notification): no new deferred work, running work aborted and saved,
// the requests already read answered, then the connection closed.
func (s *Server) closeAbort() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	s.inflight.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.settle(ctx, engine.Abort)
	if a := s.dialectACP(); a != nil {
		a.CancelPending()
	}
	s.inflight.wait()
	_ = s.conn.Close()
}

// settle shuts the engine down once; every caller waits for it. An abort
// that comes while a drain is running stops the running work at once, so
// the drain ends too.
func (s *Server) settle(ctx context.Context, mode engine.ShutdownMode) {
	if mode == engine.Abort {
		for _, sess := range s.eng.LiveSessions() {
			sess.RequestAbort()
		}
	}
	s.settleOnce.Do(func() {
		go func() {
			err := s.eng.Shutdown(ctx, mode)
			s.mu.Lock()
			s.settleErr = err
			s.mu.Unlock()
			close(s.settleDone)
		}()
	})
	select {
	case <-s.settleDone:
	case <-ctx.Done():
	}
}

// Handle runs on jsonrpc2's read loop. Methods run inline, in the order
// they were read, up to the point where they would wait; what waits
// (abort's cleanup, disk-heavy commands, model calls) continues on its own
// goroutine so the read loop stays free for approval answers.
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-s.ready
	if a := s.dialectACP(); a != nil {
		a.Handle(ctx, conn, req)
		return
	}
	if req.Method == "initialize" && !req.Notif && isACPInitialize(req.Params) {
		s.mu.Lock()
		first := !s.initialized
		s.mu.Unlock()
		if first {
			s.useACP().Handle(ctx, conn, req)
			return
		}
	}
	if req.Notif {
		s.handleNotification(req)
		return
	}
	m, ok := methods[req.Method]
	if !ok {
		s.replyErr(req.ID, methodNotFound(req.Method))
		return
	}
	s.mu.Lock()
	down := s.shutdown && !m.afterShutdown
	s.mu.Unlock()
	if down {
		s.reply(req.ID, nil, &engine.Error{Code: engine.CodeBusy, Message: "the server is shutting down"})
		return
	}
	if !m.unbounded && req.Params != nil && len(*req.Params) > maxParamsBytes {
		s.reply(req.ID, nil, invalidParams("params of %s are larger than %d bytes", req.Method, maxParamsBytes))
		return
	}
	res, err := s.call(m, req.Params)
	if d, ok := res.(deferred); ok && err == nil {
		if !s.inflight.add() {
			s.reply(req.ID, nil, &engine.Error{Code: engine.CodeBusy, Message: "the server is shutting down"})
			return
		}
		go func() {
			defer s.inflight.done()
			res, err := s.safeDeferred(d)
			s.reply(req.ID, res, err)
		}()
		return
	}
	s.reply(req.ID, res, err)
}

// deferred is a method's waiting half, run off the read loop.
type deferred func(ctx context.Context) (any, error)

func (s *Server) call(m method, params *json.RawMessage) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("handler panic", "panic", p)
			res, err = nil, &engine.Error{Code: engine.CodeInternal, Message: sprintf("internal error: %v", p)}
		}
	}()
	return m.fn(s, params)
}

func (s *Server) safeDeferred(d deferred) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("handler panic", "panic", p)
			res, err = nil, &engine.Error{Code: engine.CodeInternal, Message: sprintf("internal error: %v", p)}
		}
	}()
	return d(context.Background())
}

func (s *Server) reply(id jsonrpc2.ID, res any, err error) {
	if err != nil {
		s.replyErr(id, toRPCError(err))
		return
	}
	if res == nil {
		res = struct{}{}
	}
	if rerr := s.conn.Reply(context.Background(), id, res); rerr != nil {
		s.log.Warn("reply not sent", "id", id.String(), "err", rerr)
	}
}

func (s *Server) replyErr(id jsonrpc2.ID, e *jsonrpc2.Error) {
	if rerr := s.conn.ReplyWithError(context.Background(), id, e); rerr != nil {
		s.log.Warn("error reply not sent", "id", id.String(), "err", rerr)
	}
}

func (s *Server) handleNotification(req *jsonrpc2.Request) {
	switch req.Method {
	case "exit":
		go s.closeAbort()
	case "$/cancelRequest", "initialized":
		// Loop's long requests are cancelled with session/abort.
	default:
		s.log.Debug("notification ignored", "method", req.Method)
	}
}

func (s *Server) lightState() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateWithoutMessages
}

// useACP switches this connection to the Agent Client Protocol.
func (s *Server) useACP() *acp.Agent {
	a := acp.New(s.eng, acp.Options{Logger: s.log, Version: s.opts.Version})
	a.Bind(s.conn)
	s.mu.Lock()
	s.acp = a
	s.initialized = true
	s.mu.Unlock()
	return a
}

func (s *Server) dialectACP() *acp.Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acp
}

// isACPInitialize: ACP's protocolVersion is an integer, ours a string.
func isACPInitialize(raw *json.RawMessage) bool {
	if raw == nil {
		return false
	}
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	if json.Unmarshal(*raw, &p) != nil || len(p.ProtocolVersion) == 0 {
		return false
	}
	// A JSON number (null would unmarshal into an int too).
	if c := p.ProtocolVersion[0]; c != '-' && (c < '0' || c > '9') {
		return false
	}
	var n int
	return json.Unmarshal(p.ProtocolVersion, &n) == nil
}

// notify maps engine events onto notifications.
func (s *Server) notify(ev engine.Event) {
	if s.dialectACP() != nil {
		return
	}
	n, ok := NotificationOf(ev)
	if !ok {
		return
	}
	if st, ok := n.Params.(*engine.StateEvent); ok && s.lightState() {
		snap := *st.Snapshot
		snap.State.MessagesFrom = snap.State.MessagesFrom + len(snap.State.Messages)
		snap.State.Messages = []store.Message{}
		n.Params = &engine.StateEvent{SessionID: st.SessionID, Snapshot: &snap}
	}
	if err := s.conn.Notify(context.Background(), n.Method, n.Params); err != nil {
		s.log.Debug("notification not sent", "method", n.Method, "err", err)
	}
}

var eventMethods = map[engine.EventKind]string{
	engine.EventRunAccepted:     "session/run_accepted",
	engine.EventMessage:         "session/message",
	engine.EventTool:            "session/tool",
	engine.EventQueueChanged:    "session/queue_changed",
	engine.EventPromptTiming:    "session/prompt_timing",
	engine.EventAgentSettled:    "session/agent_settled",
	engine.EventState:           "session/state",
	engine.EventSessionsChanged: "sessions/changed",
}

// approver sends approval requests to the client and withdraws them with
// $/cancelRequest when the run stops first.
type approver struct{ s *Server }

func (a approver) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	if a.s.inputClosed.Err() != nil {
		return "", errors.New("the client closed its input, so nobody can answer")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(a.s.inputClosed, cancel)
	defer stop()
	const method = "session/request_approval"
	id := jsonrpc2.ID{Str: "approval-" + req.ApprovalID, IsString: true}
	w, err := a.s.conn.DispatchCall(ctx, method, req, jsonrpc2.PickID(id))
	if err != nil {
		return "", rpcerr.FromClient(method, err)
	}
	var res struct {
		Decision string `json:"decision"`
	}
	err = w.Wait(ctx, &res)
	if ctx.Err() != nil {
		_ = a.s.conn.Notify(context.Background(), "$/cancelRequest", map[string]any{"id": id.Str})
		if a.s.inputClosed.Err() != nil {
			// Not ctx's error: the engine counts this as rejected, also
			// when --on-eof=abort stops the run at the same moment.
			return "", errors.New("the client closed its input before answering")
		}
		return "", ctx.Err()
	}
	// An error answer is a rejection, in the client's words.
	var ce *rpcerr.ClientError
	if err = rpcerr.FromClient(method, err); errors.As(err, &ce) {
		return "", &engine.RejectedError{Message: ce.Said}
	}
	if err != nil {
		return "", err
	}
	return res.Decision, nil
}

// inflight counts the deferred halves of requests, so shutdown can answer
// every request already read. Unlike a WaitGroup it may be waited on while
// the read loop still adds, and it refuses new work once closed.
type inflight struct {
	mu      sync.Mutex
	n       int
	closed  bool
	waiters chan struct{} // closed when n drops to zero
}

func (f *inflight) add() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	return true
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.waiters != nil {
		close(f.waiters)
		f.waiters = nil
	}
}

// wait returns once no deferred request is running.
func (f *inflight) wait() {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	if f.waiters == nil {
		f.waiters = make(chan struct{})
	}
	ch := f.waiters
	f.mu.Unlock()
	<-ch
}

// close refuses new deferred work (after exit or a signal).
func (f *inflight) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}
