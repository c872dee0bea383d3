// Package acp is Loop's Agent Client Protocol (ACP v1) dialect: the
// methods and notifications Zed and other ACP editors speak, translated to
// and from the same engine the native dialect drives. The agent owns no
// session state beyond what the translation needs (which sessions this
// connection has open, which prompts wait for their stop reason).
//
// The transport is the caller's: it reads frames (package wire), runs
// jsonrpc2's read loop and calls Handle for every message once it knows
// the dialect is ACP. See docs/acp.md.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// Options configure an Agent.
type Options struct {
	Logger *slog.Logger
	// Version is reported in initialize's agentInfo.
	Version string
	// PageSize is how many sessions one session/list page holds; 0 means 50.
	PageSize int
}

const defaultPageSize = 50

// Agent serves ACP for one connection over one engine.
type Agent struct {
	eng  *engine.Engine
	opts Options
	log  *slog.Logger

	// evMu orders what the agent tells the client about sessions: engine
	// events are translated one at a time, and session/load holds it while
	// it replays, so the live updates of that session come after the replay.
	evMu sync.Mutex

	mu          sync.Mutex
	conn        *jsonrpc2.Conn
	unsub       func()
	initialized bool
	closed      bool
	client      clientCapabilities
	clientInfo  *implementation
	views       map[string]*view              // sessions open on this connection
	prompts     map[string]*pendingPrompt     // by the engine requestId the agent generated
	rejected    map[string]map[string]bool    // session -> tool -> rejected always
	asks        map[string]context.CancelFunc // permission requests in flight, by approval id
	inflight    sync.WaitGroup
	callSeq     atomic.Uint64 // ids of the agent's requests to the client

	// inputGone ends when the client's input does: from then on nobody
	// can answer a permission request, an fs call or a terminal.
	inputGone context.Context
	endInput  context.CancelFunc
}

// pendingPrompt is a session/prompt waiting for its run to settle.
type pendingPrompt struct {
	rpcID     jsonrpc2.ID
	sessionID string
	requestID string
	runID     string
	started   bool   // run_accepted seen: it left the queue
	cancelled bool   // session/cancel or close arrived: the answer is "cancelled"
	stop      string // the stop reason of the run's last assistant message
}

// New makes an agent for eng. Call Bind before the first message.
func New(eng *engine.Engine, opts Options) *Agent {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PageSize <= 0 {
		opts.PageSize = defaultPageSize
	}
	a := &Agent{
		eng:      eng,
		opts:     opts,
		log:      opts.Logger,
		views:    map[string]*view{},
		prompts:  map[string]*pendingPrompt{},
		rejected: map[string]map[string]bool{},
		asks:     map[string]context.CancelFunc{},
	}
	a.inputGone, a.endInput = context.WithCancel(context.Background())
	return a
}

// InputClosed tells the agent the client's input has ended: calls waiting
// for the client (permission, fs, terminal) fail at once, and new ones are
// not sent, so running work can finish instead of waiting forever.
func (a *Agent) InputClosed() { a.endInput() }

// whileClientListens returns ctx, also cancelled when the client's input
// ends.
func (a *Agent) whileClientListens(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.inputGone, cancel)
	return ctx, func() { stop(); cancel() }
}

var errInputClosed = errors.New("the client closed its input, so nobody can answer")

// Bind sets the connection the agent replies and notifies on, subscribes
// to the engine's events and installs the agent as the engine's approver.
func (a *Agent) Bind(conn *jsonrpc2.Conn) {
	a.mu.Lock()
	a.conn = conn
	subscribe := a.unsub == nil && !a.closed
	a.mu.Unlock()
	if !subscribe {
		return
	}
	unsub := a.eng.Subscribe(a.onEvent)
	a.mu.Lock()
	a.unsub = unsub
	a.mu.Unlock()
	a.eng.SetApprover(a)
}

// Close unsubscribes from the engine and withdraws pending permission
// requests. Prompts still running keep running; their replies are not sent.
func (a *Agent) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	unsub := a.unsub
	asks := a.asks
	a.asks = map[string]context.CancelFunc{}
	a.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	for _, cancel := range asks {
		cancel()
	}
}

// CancelPending answers every prompt still waiting with stopReason
// "cancelled". Call it after the engine's Shutdown, when no run is left to
// settle them: a prompt queued behind an aborted run would otherwise never
// be answered, and the stream's EOF drain would wait for it.
func (a *Agent) CancelPending() {
	a.evMu.Lock()
	a.mu.Lock()
	orphans := a.takePromptsLocked("")
	a.mu.Unlock()
	a.evMu.Unlock()
	for _, p := range orphans {
		a.reply(p.rpcID, map[string]any{"stopReason": "cancelled"}, nil)
	}
}

// Wait blocks until the replies of requests that were handed off the read
// loop (load, list, set_mode, ...) are sent. Prompt replies are not
// included: they come when their runs settle.
func (a *Agent) Wait() { a.inflight.Wait() }

func (a *Agent) connection() *jsonrpc2.Conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// method is one entry of the method table. fn runs on the read loop; it
// returns a deferred for what waits, or replyLater when the reply comes
// from elsewhere (a prompt's settlement).
type method struct {
	fn         func(a *Agent, id jsonrpc2.ID, params *json.RawMessage) (any, error)
	beforeInit bool
}

type deferred func(ctx context.Context) (any, error)

type replyLaterT struct{}

var replyLater = replyLaterT{}

func later(fn func(ctx context.Context) (any, error)) (any, error) { return deferred(fn), nil }

var methods map[string]method

func init() {
	methods = map[string]method{
		"initialize":                {fn: (*Agent).initialize, beforeInit: true},
		"authenticate":              {fn: (*Agent).authenticate},
		"session/new":               {fn: (*Agent).sessionNew},
		"session/load":              {fn: (*Agent).sessionLoad},
		"session/resume":            {fn: (*Agent).sessionResume},
		"session/list":              {fn: (*Agent).sessionList},
		"session/close":             {fn: (*Agent).sessionClose},
		"session/delete":            {fn: (*Agent).sessionDelete},
		"session/prompt":            {fn: (*Agent).sessionPrompt},
		"session/set_mode":          {fn: (*Agent).sessionSetMode},
		"session/set_config_option": {fn: (*Agent).sessionSetConfigOption},
		"session/set_model":         {fn: (*Agent).sessionSetModel},
	}
}

// Handle runs on jsonrpc2's read loop, like the native server's: each
// method runs inline, in read order, up to where it would wait; what waits
// (disk loads, replays, config changes) goes on its own goroutine so the
// loop stays free for permission answers and session/cancel.
func (a *Agent) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if a.connection() == nil {
		a.Bind(conn)
	}
	if req.Notif {
		a.notification(req)
		return
	}
	m, ok := methods[req.Method]
	if !ok {
		a.replyErr(req.ID, methodNotFound(req.Method))
		return
	}
	if !m.beforeInit {
		a.mu.Lock()
		ready := a.initialized
		a.mu.Unlock()
		if !ready {
			a.replyErr(req.ID, wire.NewError(codeNotInit, "not_initialized", "initialize first", nil))
			return
		}
	}
	res, err := a.call(m, req)
	if err != nil {
		a.reply(req.ID, nil, rpcError(err, sessionIDOf(req.Params)))
		return
	}
	switch r := res.(type) {
	case replyLaterT:
	case deferred:
		a.inflight.Add(1)
		go func() {
			defer a.inflight.Done()
			res, err := a.safeDeferred(r)
			if err != nil {
				a.reply(req.ID, nil, rpcError(err, sessionIDOf(req.Params)))
				return
			}
			a.reply(req.ID, res, nil)
		}()
	default:
		a.reply(req.ID, res, nil)
	}
}

func (a *Agent) call(m method, req *jsonrpc2.Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("acp handler panic", "method", req.Method, "panic", p)
			res, err = nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return m.fn(a, req.ID, req.Params)
}

func (a *Agent) safeDeferred(d deferred) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("acp handler panic", "panic", p)
			res, err = nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return d(context.Background())
}

func (a *Agent) reply(id jsonrpc2.ID, res any, rerr *jsonrpc2.Error) {
	conn := a.connection()
	if conn == nil {
		return
	}
	if rerr != nil {
		a.replyErr(id, rerr)
		return
	}
	if res == nil {
		res = struct{}{}
	}
	if err := conn.Reply(context.Background(), id, res); err != nil {
		a.log.Warn("acp reply not sent", "id", id.String(), "err", err)
	}
}

func (a *Agent) replyErr(id jsonrpc2.ID, e *jsonrpc2.Error) {
	conn := a.connection()
	if conn == nil {
		return
	}
	if err := conn.ReplyWithError(context.Background(), id, e); err != nil {
		a.log.Warn("acp error reply not sent", "id", id.String(), "err", err)
	}
}

// notify sends one session/update.
func (a *Agent) notify(sessionID string, update any) {
	conn := a.connection()
	if conn == nil {
		return
	}
	if err := conn.Notify(context.Background(), "session/update", sessionNotification{SessionID: sessionID, Update: update}); err != nil {
		a.log.Debug("acp update not sent", "session", sessionID, "err", err)
	}
}

func (a *Agent) notification(req *jsonrpc2.Request) {
	switch req.Method {
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if err := decodeParams(req.Params, &p); err != nil || p.SessionID == "" {
			a.log.Warn("session/cancel without a sessionId")
			return
		}
		if _, err := a.cancelSession(p.SessionID); err != nil {
			a.log.Debug("session/cancel", "session", p.SessionID, "err", err)
		}
	case "$/cancel_request":
		// Loop's long requests are prompts, cancelled with session/cancel.
	default:
		a.log.Debug("acp notification ignored", "method", req.Method)
	}
}

// sessionIDOf reads params.sessionId for error data, if there is one.
func sessionIDOf(raw *json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(*raw, &p)
	return p.SessionID
}
