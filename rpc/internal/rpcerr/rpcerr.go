// Package rpcerr maps engine failures onto JSON-RPC errors, the same way
// for every dialect: the integer code says the broad class, data.code the
// engine's stable name, which clients branch on.
package rpcerr

import (
	"context"
	"errors"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// Integer codes beyond JSON-RPC's own (docs/protocol.md lists them).
const (
	Conflict    int64 = -32001 // the session's state refuses the request now
	NotFound    int64 = -32002 // an id names nothing (ACP's resource not found)
	Unavailable int64 = -32003 // no model can serve the request
	Storage     int64 = -32004 // the disk refused
	Cancelled   int64 = -32800 // ACP's request cancelled
)

var integers = map[engine.Code]int64{
	engine.CodeInvalidParams:          wire.InvalidParams,
	engine.CodeInvalidImages:          wire.InvalidParams,
	engine.CodeInvalidTextFiles:       wire.InvalidParams,
	engine.CodeInvalidModelEffort:     wire.InvalidParams,
	engine.CodeSessionNotFound:        NotFound,
	engine.CodeWorkspaceNotFound:      NotFound,
	engine.CodeQueueItemMissing:       NotFound,
	engine.CodeModelNotFound:          NotFound,
	engine.CodeBusy:                   Conflict,
	engine.CodePendingSave:            Conflict,
	engine.CodeApprovalPending:        Conflict,
	engine.CodeRequestConflict:        Conflict,
	engine.CodeDeliveryUnknown:        Conflict,
	engine.CodeNothingToCompact:       Conflict,
	engine.CodeNotResumable:           Conflict,
	engine.CodeQueueConflict:          Conflict,
	engine.CodeFilesConflict:          Conflict,
	engine.CodeSessionLocked:          Conflict,
	engine.CodeNoProvider:             Unavailable,
	engine.CodeModelImagesUnsupported: Unavailable,
	engine.CodeContextBudget:          Unavailable,
	engine.CodeBudgetExceeded:         Unavailable,
	engine.CodeModelError:             Unavailable,
	engine.CodeConfigError:            Unavailable,
	engine.CodeStorageError:           Storage,
	engine.CodeCancelled:              Cancelled,
	engine.CodeInternal:               wire.Internal,
}

// CodeOf is the engine code of err; a cancelled context is "cancelled".
func CodeOf(err error) engine.Code {
	if errors.Is(err, context.Canceled) {
		return engine.CodeCancelled
	}
	return engine.CodeOf(err)
}

// Integer is the JSON-RPC integer code of an engine code.
func Integer(code engine.Code) int64 {
	if n, ok := integers[code]; ok {
		return n
	}
	return wire.Internal
}

// Translate turns err into a JSON-RPC error with data.code. extra adds
// fields to data; when a run and its save both failed, data.errors lists
// both. A *jsonrpc2.Error passes through unchanged.
func Translate(err error, extra map[string]any) *jsonrpc2.Error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return re
	}
	code := CodeOf(err)
	var ee *engine.Error
	if errors.As(err, &ee) && len(ee.Causes) > 1 {
		var causes []map[string]any
		for _, c := range ee.Causes {
			causes = append(causes, map[string]any{"code": CodeOf(c), "message": c.Error()})
		}
		if extra == nil {
			extra = map[string]any{}
		}
		extra["errors"] = causes
	}
	return wire.NewError(Integer(code), string(code), err.Error(), extra)
}
