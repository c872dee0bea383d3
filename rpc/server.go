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
	"sync/atomic"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/acp"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// ProtocolVersion is the native dialect's version string.
const ProtocolVersion = "loop/1"

// Options configure a Server.
type Options struct {
	Framing Framing
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

	// disp dispatches the native dialect's messages; it counts the
	// deferred halves of requests still to be answered.
	disp *dispatch.Dispatcher

	mu          sync.Mutex
	initialized bool
	shutdown    bool

	// Settling (engine shutdown) happens once; every caller waits for it.
	settleOnce sync.Once
	settleDone chan struct{}
	settleErr  error
	pending    map[string]context.CancelFunc // approval requests in flight, by request id
	acp        *acp.Agent                    // set once the dialect is ACP
	// stateMode is what session/state notifications carry of the history
	// (capabilities.stateMessages); held is, by session, what the previous
	// one carried to this client, for false and "delta" (statemessages.go).
	stateMode stateMode
	held      map[string]engine.Held
	// inputClosed ends when stdin does: approvals cannot be answered after.
	// inputEnded is set first, before inputClosed wakes anyone: with
	// --on-eof=abort the runs are stopped between the two, so that an
	// approval counts as rejected by the closed input and its run still
	// ends cancelled, not carried on to completion by the rejection.
	inputEnded  atomic.Bool
	inputClosed context.Context
	inputDone   context.CancelFunc
}

// NewServer makes a server for eng.
func NewServer(eng *engine.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// What the server logs (a failed reply, a panic) holds no key either.
	opts.Logger = eng.RedactLog(opts.Logger)
	s := &Server{eng: eng, opts: opts, log: opts.Logger, pending: map[string]context.CancelFunc{}, held: map[string]engine.Held{}, ready: make(chan struct{}), settleDone: make(chan struct{})}
	s.inputClosed, s.inputDone = context.WithCancel(context.Background())
	s.disp = dispatch.New(dispatch.Dialect{
		Methods: s.methods(),
		Notifications: map[string]func(*json.RawMessage){
			"exit": func(*json.RawMessage) { go s.closeAbort() },
			// Loop's long requests are cancelled with session/abort.
			"$/cancelRequest": func(*json.RawMessage) {},
			"initialized":     func(*json.RawMessage) {},
		},
		Logger: s.log,
	})
	return s
}

// Serve speaks JSON-RPC over r and w until the input ends (EOF) or ctx is
// cancelled (a signal). Either way running work is settled and saved
// first. It returns engine.Unsaved: non-nil means some session's result
// could only be written to a recovery file.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	mergeText := wire.MergeText(textStreams()...)
	s.stream = wire.New(r, w, wire.Options{
		Framing: s.opts.Framing,
		Merger: func(prev, next *wire.Outgoing) bool {
			return mergeText(prev, next) || acp.MergeChunks(prev, next)
		},
		OnEOF: func(ctx context.Context) {
			// stdin closed: nobody can answer an approval any more, so
			// waiting ones are rejected; answer what was read, then drain
			// or abort.
			a := s.dialectACP()
			s.inputEnded.Store(true)
			if a != nil {
				a.InputEnding()
			}
			if s.opts.OnEOF == engine.Abort {
				// Abort first, so deferred requests (a compaction, a title)
				// are cancelled rather than waited for, and a run whose
				// approval nobody can answer any more stops there instead
				// of going on with the rejection (inputEnded).
				s.settle(ctx, engine.Abort)
				s.endInput(a)
				s.disp.Wait()
				if a != nil {
					a.Wait()
				}
			} else {
				s.endInput(a)
				s.disp.Wait()
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
	s.disp.Close()
	a := s.dialectACP()
	if a != nil {
		a.RefuseDeferred()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.settle(ctx, engine.Abort)
	if a != nil {
		a.CancelPending()
	}
	s.disp.Wait()
	if a != nil {
		a.Wait()
	}
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

// Handle runs on jsonrpc2's read loop. It picks the dialect (ACP when
// the first initialize carries an integer protocolVersion) and hands the
// message to that dialect's dispatcher (rpc/internal/dispatch).
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
	s.disp.Handle(ctx, conn, req)
}

// useACP switches this connection to the Agent Client Protocol.
func (s *Server) useACP() *acp.Agent {
	a := acp.New(s.eng, acp.Options{Logger: s.log, Version: s.opts.Version, Outbox: s.stream})
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
	var p native.InitializeParams
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

// notify maps engine events onto notifications. It runs under the
// engine's sequence lock of the event's session, so it only queues: the
// outbox's writer encodes the payload (wire.Notification), except for
// streaming pieces, which are small and encoded at once so that the
// outbox can merge them while the client lags (wire.MergeText).
func (s *Server) notify(ev engine.Event) {
	if s.dialectACP() != nil {
		return
	}
	s.forget(ev)
	n, ok := notificationFor(ev, s.stateSnapshot)
	if !ok {
		return
	}
	var err error
	if streamPiece(ev) {
		err = s.conn.Notify(context.Background(), n.Method, n.Params)
	} else {
		err = s.stream.WriteObject(&wire.Notification{Method: n.Method, Params: n.Params})
	}
	if err != nil {
		s.log.Debug("notification not sent", "method", n.Method, "err", err)
	}
}

// streamPiece: a delta of a streaming message or a tool's progress, the
// notifications the outbox merges.
func streamPiece(ev engine.Event) bool {
	switch p := ev.Payload.(type) {
	case *engine.MessageEvent:
		return p.Event == "delta"
	case *engine.ToolEvent:
		return p.Event == "progress"
	}
	return false
}

// eventMethods names the notification of each engine event
// (native.Notifications lists them with their params' types).
var eventMethods = map[engine.EventKind]string{
	engine.EventRunAccepted:     "session/run_accepted",
	engine.EventMessage:         "session/message",
	engine.EventTool:            "session/tool",
	engine.EventQueueChanged:    "session/queue_changed",
	engine.EventPromptTiming:    "session/prompt_timing",
	engine.EventAgentSettled:    "session/agent_settled",
	engine.EventState:           "session/state",
	engine.EventSessionsChanged: "sessions/changed",
	engine.EventRetry:           "session/retry",
}

// approver sends approval requests to the client and withdraws them with
// $/cancelRequest when the run stops first. Each prompt and resume this
// connection submits carries it (engine.PromptInput.Approver), so this
// client answers the approvals of the runs it started and no other
// connection on the engine does.
type approver struct{ s *Server }

func (a approver) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	if a.s.inputEnded.Load() {
		return "", errors.New("the client closed its input, so nobody can answer")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(a.s.inputClosed, cancel)
	defer stop()
	const method = "session/request_approval"
	id := jsonrpc2.ID{Str: "approval-" + req.ApprovalID, IsString: true}
	w, err := a.s.conn.DispatchCall(ctx, method, approvalParams(req), jsonrpc2.PickID(id))
	if err != nil {
		return "", rpcerr.FromClient(method, err)
	}
	var res native.ApprovalAnswer
	err = w.Wait(ctx, &res)
	if ctx.Err() != nil {
		_ = a.s.conn.Notify(context.Background(), "$/cancelRequest", &native.CancelRequest{ID: id.Str})
		if a.s.inputEnded.Load() {
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

// endInput wakes everything waiting for an answer from the client, whose
// input has ended: approvals, and ACP's client calls.
func (s *Server) endInput(a *acp.Agent) {
	s.inputDone()
	if a != nil {
		a.InputClosed()
	}
}
