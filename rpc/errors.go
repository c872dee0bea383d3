package rpc

import "github.com/loopdev/loop/rpc/internal/dispatch"

func invalidParams(format string, args ...any) error {
	return dispatch.InvalidParams(format, args...)
}
