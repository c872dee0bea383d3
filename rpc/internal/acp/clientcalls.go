package acp

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/sourcegraph/jsonrpc2"
)

// Requests from the agent to the client (fs/*, terminal/*). They are made
// from the goroutines that run tools, never from jsonrpc2's read loop: the
// loop must stay free to read the answers.

// cleanupWait bounds how long the agent waits for a client to kill or
// release a terminal after the run stopped: a client that never answers
// must not hold the run.
const cleanupWait = 5 * time.Second

var errNotBound = errors.New("the ACP connection is not bound")

// dispatchClient sends one request to the client. The id is a string
// ("loop-N") so that $/cancel_request can name it.
func (a *Agent) dispatchClient(ctx context.Context, method string, params any) (jsonrpc2.Waiter, jsonrpc2.ID, error) {
	a.mu.Lock()
	conn, closed := a.conn, a.closed
	a.mu.Unlock()
	if closed {
		return jsonrpc2.Waiter{}, jsonrpc2.ID{}, errors.New("the ACP connection is closed")
	}
	if conn == nil {
		return jsonrpc2.Waiter{}, jsonrpc2.ID{}, errNotBound
	}
	id := jsonrpc2.ID{Str: "loop-" + strconv.FormatUint(a.callSeq.Add(1), 10), IsString: true}
	w, err := conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return jsonrpc2.Waiter{}, id, rpcerr.FromClient(method, err)
	}
	return w, id, nil
}

// callClient makes one request and waits for its answer. When ctx ends
// first, the request is withdrawn with $/cancel_request and ctx's error
// returned.
func (a *Agent) callClient(ctx context.Context, method string, params, result any) error {
	if a.inputEnded.Load() {
		return errInputClosed
	}
	ctx, cancel := a.whileClientListens(ctx)
	defer cancel()
	w, id, err := a.dispatchClient(ctx, method, params)
	if err != nil {
		return err
	}
	err = w.Wait(ctx, result)
	if ctx.Err() != nil {
		a.withdraw(id)
		if a.inputEnded.Load() {
			return errInputClosed
		}
		return ctx.Err()
	}
	// The model reads this (a tool error): the client's words, not
	// jsonrpc2's.
	return rpcerr.FromClient(method, err)
}

// withdraw tells the client the agent no longer waits for request id.
func (a *Agent) withdraw(id jsonrpc2.ID) {
	if conn := a.connection(); conn != nil {
		_ = conn.Notify(context.Background(), "$/cancel_request", map[string]any{"requestId": id.Str})
	}
}
