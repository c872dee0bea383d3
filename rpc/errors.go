package rpc

import (
	"context"
	"errors"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// Integer error codes. Clients branch on data.code; the integer only says
// the broad class (docs/protocol.md lists both).
const (
	codeConflict    int64 = -32001 // the session's state refuses the request now
	codeNotFound    int64 = -32002 // an id names nothing
	codeUnavailable int64 = -32003 // no model can serve the request
	codeStorage     int64 = -32004 // the disk refused
	codeCancelled   int64 = -32800
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
	engine.CodeConfigError:            codeUnavailable,
	engine.CodeInternal:               wire.Internal,
}

// toRPCError translates any error into a JSON-RPC error with data.code.
func toRPCError(err error) *jsonrpc2.Error {
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
	var ee *engine.Error
	if errors.As(err, &ee) && len(ee.Causes) > 1 {
		var causes []map[string]any
		for _, c := range ee.Causes {
			causes = append(causes, map[string]any{"code": engine.CodeOf(c), "message": c.Error()})
		}
		extra = map[string]any{"errors": causes}
	}
	return wire.NewError(n, string(code), err.Error(), extra)
}

func invalidParams(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalidParams, Message: sprintf(format, args...)}
}

func methodNotFound(method string) *jsonrpc2.Error {
	return wire.NewError(wire.MethodNotFound, "method_not_found", "unknown method "+method, nil)
}
