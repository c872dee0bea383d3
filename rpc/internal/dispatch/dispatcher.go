// Package dispatch is the JSON-RPC dispatcher both dialects share (the
// native one in package rpc, ACP in rpc/internal/acp): the method table, the split
// between a method's inline half (on the read loop, in request order) and
// its deferred half (off it), panic recovery, counting the deferred halves
// still running, params decoding and the mapping of errors onto JSON-RPC
// errors with a stable data.code. A dialect only describes itself (a
// Dialect: its methods, notifications and error wording) and translates
// between its wire shapes and engine calls. See docs/dispatch.md.
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// Call is one request or notification as a handler sees it.
type Call struct {
	ID     jsonrpc2.ID // zero for a notification
	Method string
	// Params are the params as the client sent them (wire.Stream keeps
	// them unaltered); nil when absent.
	Params *json.RawMessage
}

// Handler is a method's inline half. It runs on the read loop, so every
// method sees the effects of the ones read before it, and must not wait:
// what waits goes into Later. It returns the result, an error, Later(fn)
// for a deferred half, or ReplyLater() when the reply is sent elsewhere.
type Handler func(c *Call) (any, error)

// Method is one entry of a method table.
type Method struct {
	Handle Handler
	// Unbounded: the params have no size limit (prompts, whose images and
	// files travel in them); every other method's are capped at MaxParams.
	Unbounded bool
	// Admit, when set, runs first and refuses the request with its error
	// (a server shutting down, a connection not initialized yet).
	Admit func() error
}

// Dialect is what a dialect tells the dispatcher about itself. Build it
// in a constructor: the handlers are usually bound to one connection's
// state.
type Dialect struct {
	Methods map[string]Method
	// Notifications run on the read loop, in order; one without an entry
	// is logged and ignored (JSON-RPC notifications get no reply).
	Notifications map[string]func(params *json.RawMessage)
	// Error maps a handler's error onto its reply. Nil means
	// rpcerr.Translate(err, nil). A *jsonrpc2.Error passes through
	// rpcerr.Translate unchanged.
	Error  func(c *Call, err error) *jsonrpc2.Error
	Logger *slog.Logger
}

// Deferred is a method's waiting half, run off the read loop.
type Deferred func(ctx context.Context) (any, error)

// Later returns fn as the deferred half of a method: the dispatcher runs
// it on its own goroutine and replies with what it returns.
func Later(fn func(ctx context.Context) (any, error)) (any, error) { return Deferred(fn), nil }

type replyLater struct{}

// ReplyLater is a handler's (or a deferred half's) result when the dialect
// answers the request itself (an ACP prompt, answered when its run
// settles; a snapshot queued in order with the session's notifications).
func ReplyLater() (any, error) { return replyLater{}, nil }

// errShuttingDown answers a request whose deferred half would start after
// Close.
func errShuttingDown() error {
	return &engine.Error{Code: engine.CodeBusy, Message: "the server is shutting down"}
}

// Dispatcher serves one dialect on one connection.
type Dispatcher struct {
	d        Dialect
	log      *slog.Logger
	inflight inflight
}

// New returns a dispatcher for d.
func New(d Dialect) *Dispatcher {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if d.Error == nil {
		d.Error = func(_ *Call, err error) *jsonrpc2.Error { return rpcerr.Translate(err, nil) }
	}
	return &Dispatcher{d: d, log: log}
}

// Handle serves one message; call it from jsonrpc2's read loop (it has
// jsonrpc2.Handler's signature). Methods run inline, in the order they
// were read, up to where they would wait; their deferred halves continue
// on their own goroutines, so the read loop stays free (for approval
// answers, a cancel).
func (d *Dispatcher) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c := &Call{ID: req.ID, Method: req.Method, Params: req.Params}
	if req.Notif {
		d.notification(c)
		return
	}
	m, ok := d.d.Methods[c.Method]
	if !ok || m.Handle == nil {
		d.ReplyError(conn, c.ID, wire.NewError(wire.MethodNotFound, wire.DataMethodNotFound, "unknown method "+c.Method, nil))
		return
	}
	if m.Admit != nil {
		if err := m.Admit(); err != nil {
			d.answer(conn, c, nil, err)
			return
		}
	}
	if !m.Unbounded && c.Params != nil && len(*c.Params) > MaxParams {
		d.answer(conn, c, nil, InvalidParams("params of %s are larger than %d bytes", c.Method, MaxParams))
		return
	}
	res, err := d.inline(m, c)
	if err != nil {
		d.answer(conn, c, nil, err)
		return
	}
	switch r := res.(type) {
	case replyLater:
	case Deferred:
		if !d.inflight.add() {
			d.answer(conn, c, nil, errShuttingDown())
			return
		}
		go func() {
			defer d.inflight.done()
			res, err := d.deferred(c, r)
			if _, later := res.(replyLater); later && err == nil {
				return // the deferred half replied itself
			}
			d.answer(conn, c, res, err)
		}()
	default:
		d.answer(conn, c, res, nil)
	}
}

// inline runs a handler; a panic becomes an internal_error reply and the
// connection stays up.
func (d *Dispatcher) inline(m Method, c *Call) (res any, err error) {
	defer d.recoverInto(c, &res, &err)
	return m.Handle(c)
}

func (d *Dispatcher) deferred(c *Call, fn Deferred) (res any, err error) {
	defer d.recoverInto(c, &res, &err)
	return fn(context.Background())
}

func (d *Dispatcher) recoverInto(c *Call, res *any, err *error) {
	if p := recover(); p != nil {
		d.log.Error("handler panic", "method", c.Method, "panic", p)
		*res, *err = nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("internal error: %v", p)}
	}
}

func (d *Dispatcher) notification(c *Call) {
	fn, ok := d.d.Notifications[c.Method]
	if !ok {
		d.log.Debug("notification ignored", "method", c.Method)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("notification handler panic", "method", c.Method, "panic", p)
		}
	}()
	fn(c.Params)
}

// answer replies to c with res, or with err mapped by the dialect.
func (d *Dispatcher) answer(conn *jsonrpc2.Conn, c *Call, res any, err error) {
	if err != nil {
		d.ReplyError(conn, c.ID, d.d.Error(c, err))
		return
	}
	d.Reply(conn, c.ID, res)
}

// Reply sends a result; nil is sent as {}.
func (d *Dispatcher) Reply(conn *jsonrpc2.Conn, id jsonrpc2.ID, res any) {
	if res == nil {
		res = struct{}{}
	}
	if err := conn.Reply(context.Background(), id, res); err != nil {
		d.log.Warn("reply not sent", "id", id.String(), "err", err)
	}
}

// ReplyError sends an error reply.
func (d *Dispatcher) ReplyError(conn *jsonrpc2.Conn, id jsonrpc2.ID, e *jsonrpc2.Error) {
	if err := conn.ReplyWithError(context.Background(), id, e); err != nil {
		d.log.Warn("error reply not sent", "id", id.String(), "err", err)
	}
}

// Wait returns once no deferred half is running. It may be called while
// the read loop still dispatches (a signal's shutdown).
func (d *Dispatcher) Wait() { d.inflight.wait() }

// Close refuses new deferred halves: a request read from now on that
// would defer is answered busy ("the server is shutting down"). Inline
// halves still run; a dialect refuses those with Method.Admit.
func (d *Dispatcher) Close() { d.inflight.close() }
