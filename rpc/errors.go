package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// toRPCError translates any error into a JSON-RPC error with data.code.
func toRPCError(err error) *jsonrpc2.Error { return rpcerr.Translate(err, nil) }

func invalidParams(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalidParams, Message: sprintf(format, args...)}
}

func methodNotFound(method string) *jsonrpc2.Error {
	return wire.NewError(wire.MethodNotFound, "method_not_found", "unknown method "+method, nil)
}
