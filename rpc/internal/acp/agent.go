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
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// Options configure an Agent.
type Options struct {
	Logger *slog.Logger
	// Version is reported in initialize's agentInfo.
	Version string
	// Outbox is the stream under the connection Bind is given. With it,
	// session updates are queued unencoded and its writer encodes them
	// (wire.Notification): translating an engine event, which runs under
	// the engine's sequence lock of that session, never encodes a large
	// update. Without it, updates are encoded as they are sent.
	Outbox *wire.Stream
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
	asks        map[string]context.CancelFunc // permission requests in flight, by approval id
	callSeq     atomic.Uint64                 // ids of the agent's requests to the client

	// disp dispatches the ACP methods; it counts the deferred halves of
	// requests still to be answered.
	disp *dispatch.Dispatcher

	// inputGone ends when the client's input does: from then on nobody
	// can answer a permission request, an fs call or a terminal.
	inputGone context.Context
	endInput  context.CancelFunc
	// inputEnded is set first (InputEnding), before inputGone wakes the
	// calls waiting: what ends after it ended for want of the client.
	inputEnded atomic.Bool
}

// pendingPrompt is a session/prompt waiting for its run to settle.
type pendingPrompt struct {
	rpcID     jsonrpc2.ID
	sessionID string
	requestID string
	runID     string
	started   bool           // run_accepted seen: it left the queue
	cancelled bool           // session/cancel or close arrived: the answer is "cancelled"
	stop      string         // the stop reason of the run's last assistant message
	usage     convo.UsageSum // the run's model calls, from its prompt timing
	// An _loop/edit's (fork.go): the fork of what its rewind dropped,
	// known once Session.Edit returns (edited); the run may settle before
	// that, and then its answer waits in held.
	edit     bool
	edited   bool
	forkedID string
	held     func()
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
		eng:     eng,
		opts:    opts,
		log:     opts.Logger,
		views:   map[string]*view{},
		prompts: map[string]*pendingPrompt{},
		asks:    map[string]context.CancelFunc{},
	}
	a.inputGone, a.endInput = context.WithCancel(context.Background())
	a.disp = dispatch.New(dispatch.Dialect{
		Methods: a.methods(),
		Notifications: map[string]func(*json.RawMessage){
			"session/cancel": a.cancelNotification,
			// Loop's long requests are prompts, cancelled with session/cancel.
			"$/cancel_request": func(*json.RawMessage) {},
		},
		// A missing session's error carries its id, as the ACP SDKs'
		// sessionNotFound helper does.
		Error:  func(c *dispatch.Call, err error) *jsonrpc2.Error { return rpcError(err, sessionIDOf(c.Params)) },
		Logger: opts.Logger.With("dialect", "acp"),
	})
	return a
}

// InputClosed tells the agent the client's input has ended: calls waiting
// for the client (permission, fs, terminal) fail at once, and new ones are
// not sent, so running work can finish instead of waiting forever.
func (a *Agent) InputClosed() { a.inputEnded.Store(true); a.endInput() }

// InputEnding marks the client's input as ended without waking the calls
// waiting for it yet: a call that ends from now on, for whatever reason,
// failed because nobody can answer it. The server stops runs between the
// two (--on-eof=abort), so a waiting permission counts as unanswered and its
// run still stops.
func (a *Agent) InputEnding() { a.inputEnded.Store(true) }

// whileClientListens returns ctx, also cancelled when the client's input
// ends.
func (a *Agent) whileClientListens(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.inputGone, cancel)
	return ctx, func() { stop(); cancel() }
}

var errInputClosed = errors.New("the client closed its input, so nobody can answer")

// Bind sets the connection the agent replies and notifies on and
// subscribes to the engine's events. The agent answers the approvals of
// the prompts it submits (engine.PromptInput.Approver), not the engine's:
// another connection on the same engine answers its own.
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
// included: they come when their runs settle. It may be called while
// messages are still being handled.
func (a *Agent) Wait() { a.disp.Wait() }

// RefuseDeferred answers requests read from now on whose work would leave
// the read loop with busy ("the server is shutting down"); a signal's
// shutdown calls it before it waits (Wait) for the ones already running.
func (a *Agent) RefuseDeferred() { a.disp.Close() }

func (a *Agent) connection() *jsonrpc2.Conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// methods is the ACP method table, bound to this agent. A handler runs on
// the read loop; it returns dispatch.Later for what waits, or
// dispatch.ReplyLater when the reply comes from elsewhere (a prompt's
// settlement). Every method but initialize needs an initialized
// connection.
func (a *Agent) methods() map[string]dispatch.Method {
	type handler = func(jsonrpc2.ID, *json.RawMessage) (any, error)
	afterInit := func(fn handler) dispatch.Method {
		return dispatch.Method{Handle: call(fn), Admit: a.initializedFirst}
	}
	return map[string]dispatch.Method{
		"initialize":     {Handle: call(a.initialize)},
		"authenticate":   afterInit(a.authenticate),
		"session/new":    afterInit(a.sessionNew),
		"session/load":   afterInit(a.sessionLoad),
		"session/resume": afterInit(a.sessionResume),
		"session/list":   afterInit(a.sessionList),
		"session/close":  afterInit(a.sessionClose),
		"session/delete": afterInit(a.sessionDelete),
		// Prompt-sized params (images, embedded resources) have no size
		// limit; every other method's are capped (dispatch.MaxParams).
		"session/prompt":            {Handle: call(a.sessionPrompt), Admit: a.initializedFirst, Unbounded: true},
		"session/set_mode":          afterInit(a.sessionSetMode),
		"session/set_config_option": afterInit(a.sessionSetConfigOption),
		"session/set_model":         afterInit(a.sessionSetModel),
		searchMethod:                afterInit(a.loopSearch),
		restoreFilesMethod:          afterInit(a.loopRestoreFiles),
		changesMethod:               afterInit(a.loopChanges),
		"session/fork":              afterInit(a.sessionFork),
		rewindMethod:                afterInit(a.loopRewind),
		editMethod:                  {Handle: call(a.loopEdit), Admit: a.initializedFirst, Unbounded: true},
	}
}

func call(fn func(jsonrpc2.ID, *json.RawMessage) (any, error)) dispatch.Handler {
	return func(c *dispatch.Call) (any, error) { return fn(c.ID, c.Params) }
}

func (a *Agent) initializedFirst() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.initialized {
		return wire.NewError(codeNotInit, "not_initialized", "initialize first", nil)
	}
	return nil
}

func later(fn func(ctx context.Context) (any, error)) (any, error) { return dispatch.Later(fn) }

// Handle runs on jsonrpc2's read loop, like the native server's: each
// method runs inline, in read order, up to where it would wait; what waits
// (disk loads, replays, config changes) goes on its own goroutine so the
// loop stays free for permission answers and session/cancel
// (rpc/internal/dispatch).
func (a *Agent) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if a.connection() == nil {
		a.Bind(conn)
	}
	a.disp.Handle(ctx, conn, req)
}

// reply answers a request outside the dispatcher's flow (a prompt's
// settlement, a cancel): with rerr when it is set, else with res.
func (a *Agent) reply(id jsonrpc2.ID, res any, rerr *jsonrpc2.Error) {
	conn := a.connection()
	if conn == nil {
		return
	}
	if rerr != nil {
		a.disp.ReplyError(conn, id, rerr)
		return
	}
	a.disp.Reply(conn, id, res)
}

// notify queues one session/update, for the outbox's writer to encode.
func (a *Agent) notify(sessionID string, update any) {
	conn := a.connection()
	if conn == nil {
		return
	}
	params := sessionNotification{SessionID: sessionID, Update: update}
	var err error
	if a.opts.Outbox != nil {
		err = a.opts.Outbox.WriteObject(&wire.Notification{Method: "session/update", Params: params})
	} else {
		err = conn.Notify(context.Background(), "session/update", params)
	}
	if err != nil {
		a.log.Debug("acp update not sent", "session", sessionID, "err", err)
	}
}

// notifyPiece sends a streaming chunk encoded at once: a piece is small,
// and the outbox merges adjacent chunks by their bytes (MergeChunks).
func (a *Agent) notifyPiece(sessionID string, update any) {
	conn := a.connection()
	if conn == nil {
		return
	}
	if err := conn.Notify(context.Background(), "session/update", sessionNotification{SessionID: sessionID, Update: update}); err != nil {
		a.log.Debug("acp update not sent", "session", sessionID, "err", err)
	}
}

// cancelNotification is session/cancel.
func (a *Agent) cancelNotification(raw *json.RawMessage) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decodeParams(raw, &p); err != nil || p.SessionID == "" {
		a.log.Warn("session/cancel without a sessionId")
		return
	}
	if _, err := a.cancelSession(p.SessionID); err != nil {
		a.log.Debug("session/cancel", "session", p.SessionID, "err", err)
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
