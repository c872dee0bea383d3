package acp

import (
	"context"
	"errors"
	"fmt"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// ACP's integer codes. ACP keeps JSON-RPC's standard codes and adds
// -32002 (resource not found), -32800 (request cancelled) and -32000
// (auth required). The other classes reuse the native dialect's integers
// (implementation-defined server errors); data.code carries the engine's
// stable name either way, so a client that knows Loop branches on it.
const (
	codeNotFound    int64 = -32002
	codeCancelled   int64 = -32800
	codeConflict    int64 = -32001
	codeUnavailable int64 = -32003
	codeStorage     int64 = -32004
	codeNotInit     int64 = -32600 // what the TS SDK's agent answers before initialize
)

var integerCodes = map[engine.Code]int64{
	engine.CodeInvalidParams:          wire.InvalidParams,
	engine.CodeInvalidImages:          wire.InvalidParams,
	engine.CodeInvalidTextFiles:       wire.InvalidParams,
	engine.CodeInvalidModelEffort:     wire.InvalidParams,
	engine.CodeSessionNotFound:        codeNotFound,
	engine.CodeWorkspaceNotFound:      codeNotFound,
	engine.CodeQueueItemMissing:       codeNotFound,
	engine.CodeModelNotFound:          codeNotFound,
	engine.CodeBusy:                   codeConflict,
	engine.CodePendingSave:            codeConflict,
	engine.CodeApprovalPending:        codeConflict,
	engine.CodeRequestConflict:        codeConflict,
	engine.CodeDeliveryUnknown:        codeConflict,
	engine.CodeNothingToCompact:       codeConflict,
	engine.CodeNotResumable:           codeConflict,
	engine.CodeQueueConflict:          codeConflict,
	engine.CodeSessionLocked:          codeConflict,
	engine.CodeNoProvider:             codeUnavailable,
	engine.CodeModelImagesUnsupported: codeUnavailable,
	engine.CodeContextBudget:          codeUnavailable,
	engine.CodeModelError:             codeUnavailable,
	engine.CodeStorageError:           codeStorage,
	engine.CodeCancelled:              codeCancelled,
	engine.CodeInternal:               wire.Internal,
}

// rpcError translates err into a JSON-RPC error whose data carries the
// engine's code (and the session id for a missing session, as the ACP
// SDKs' sessionNotFound helper does).
func rpcError(err error, sessionID string) *jsonrpc2.Error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return re
	}
	code := engine.CodeOf(err)
	if errors.Is(err, context.Canceled) {
		code = engine.CodeCancelled
	}
	n, ok := integerCodes[code]
	if !ok {
		n = wire.Internal
	}
	var extra map[string]any
	if n == codeNotFound && sessionID != "" && (code == engine.CodeSessionNotFound || code == engine.CodeWorkspaceNotFound) {
		extra = map[string]any{"sessionId": sessionID}
	}
	var ee *engine.Error
	if errors.As(err, &ee) && len(ee.Causes) > 1 {
		var causes []map[string]any
		for _, c := range ee.Causes {
			causes = append(causes, map[string]any{"code": engine.CodeOf(c), "message": c.Error()})
		}
		if extra == nil {
			extra = map[string]any{}
		}
		extra["errors"] = causes
	}
	return wire.NewError(n, string(code), err.Error(), extra)
}

func invalidParams(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func methodNotFound(method string) *jsonrpc2.Error {
	return wire.NewError(wire.MethodNotFound, "method_not_found", "unknown method "+method, nil)
}
