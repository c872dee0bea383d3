package acp

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/sourcegraph/jsonrpc2"
)

// ACP keeps JSON-RPC's standard codes and adds -32002 (resource not
// found), -32800 (request cancelled) and -32000 (auth required); the other
// classes reuse the native dialect's integers (package rpcerr), and
// data.code carries the engine's stable name either way.
const (
	codeNotFound        = rpcerr.NotFound
	codeCancelled       = rpcerr.Cancelled
	codeNotInit   int64 = -32600 // what the TS SDK's agent answers before initialize
)

// rpcError translates err into a JSON-RPC error whose data carries the
// engine's code (and the session id for a missing session, as the ACP
// SDKs' sessionNotFound helper does).
func rpcError(err error, sessionID string) *jsonrpc2.Error {
	var extra map[string]any
	code := rpcerr.CodeOf(err)
	if sessionID != "" && (code == engine.CodeSessionNotFound || code == engine.CodeWorkspaceNotFound) {
		extra = map[string]any{"sessionId": sessionID}
	}
	return rpcerr.Translate(err, extra)
}

func invalidParams(format string, args ...any) error {
	return dispatch.InvalidParams(format, args...)
}
