package engine

import (
	"fmt"
	"runtime/debug"
)

// A panic inside a command or a run is a bug, but it must not take the
// session with it: the operation settles with internal_error, its locks
// are released and the session takes work again (docs/protocol.md, error
// codes). The helpers below are deferred where operations end.

// panicError is the internal_error an operation settles with after a
// panic; the stack goes to the log, not to the client.
func (s *Session) panicError(what string, p any) *Error {
	s.e.log.Error("panic", "session", s.id, "in", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return errorf(CodeInternal, "internal error in %s: %v", what, p)
}

// settleCommand is deferred by an idle command's body right after it took
// the lock: on a panic it releases the lock (release does nothing when the
// body already did), publishes the settled state and makes err the
// command's internal_error. It must be deferred directly: recover works
// only there.
func (s *Session) settleCommand(release func(), err *error) {
	p := recover()
	if p == nil {
		return
	}
	*err = s.panicError("a session command", p)
	release()
	s.publishState()
}

// guard runs fn and turns a panic inside it into an internal_error, for
// the steps of a run whose failure is an ordinary run error.
func (s *Session) guard(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.panicError(what, p)
		}
	}()
	return fn()
}
