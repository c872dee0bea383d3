package dispatch

import (
	"context"
	"fmt"
)

// TypedHandler is a method that takes its params decoded and returns its
// result as Go values: P is what its params decode into, R what its
// result encodes from. It is the method's inline half (see Handler): it
// runs on the read loop and must not wait; what waits it hands to Defer.
type TypedHandler[P, R any] func(ctx context.Context, p *P) (*R, error)

// Unread is the params of a method that ignores them: Typed neither
// decodes nor checks them, whatever the client sent (shutdown).
type Unread struct{}

// Union is a result that takes one of several shapes (session/queue
// answers a begin-edit with its item and every other action with the
// snapshot). Typed replies with Variant, the shape that was set.
type Union interface {
	Variant() any
}

// Typed is the one adapter from a typed method to the dispatcher. It
// decodes the params into a new P with Decode, in the dialect's wording w
// (so every method refuses the same things with the same codes: params
// that are not an object, strings that are not valid Unicode, members of
// the wrong type; missing or null params decode as {}), then lets go of the
// frame's params: a prompt's may be 50 MB, and the run it starts should not
// hold them. It runs h inline and replies with its result; a nil result
// is {}. h may instead return what Defer or Replied return.
func Typed[P, R any](w Wording, h TypedHandler[P, R]) Handler {
	return func(c *Call) (any, error) {
		p := new(P)
		if _, unread := any(p).(*Unread); !unread {
			if err := Decode(c.Params, p, w); err != nil {
				return nil, err
			}
			if c.Params != nil {
				*c.Params = nil
			}
		}
		st := &callState{call: c}
		r, err := h(context.WithValue(context.Background(), callKey{}, st), p)
		if err != nil {
			return nil, err
		}
		if st.later != nil {
			return st.later, nil
		}
		if st.replied {
			return replyLater{}, nil
		}
		return resultOf(r), nil
	}
}

// resultOf is what the dispatcher replies with for r: nil for none (the
// reply is {}), a Union's variant, else r itself.
func resultOf[R any](r *R) any {
	if r == nil {
		return nil
	}
	if u, ok := any(r).(Union); ok {
		return u.Variant()
	}
	return r
}

// callState is what a typed handler's context carries: the call, and what
// the handler asked for besides a result.
type callState struct {
	call    *Call
	later   Deferred
	replied bool
}

type callKey struct{}

func stateOf(ctx context.Context, what string) *callState {
	st, ok := ctx.Value(callKey{}).(*callState)
	if !ok {
		panic(fmt.Sprintf("dispatch.%s outside a typed handler", what))
	}
	return st
}

// CallOf is the call a typed handler (or its deferred half) serves: its
// id, for a reply the dialect sends itself.
func CallOf(ctx context.Context) *Call { return stateOf(ctx, "CallOf").call }

// Defer hands fn to the dispatcher as the deferred half of the call ctx
// belongs to: the handler returns what Defer returns, the dispatcher runs
// fn on its own goroutine (counted, so shutdown waits for it; refused once
// the dispatcher is closed) and replies with fn's result or error.
func Defer[R any](ctx context.Context, fn func(ctx context.Context) (*R, error)) (*R, error) {
	st := stateOf(ctx, "Defer")
	st.later = func(dctx context.Context) (any, error) {
		r, err := fn(context.WithValue(dctx, callKey{}, st))
		if err != nil {
			return nil, err
		}
		if st.replied {
			return replyLater{}, nil
		}
		return resultOf(r), nil
	}
	return nil, nil
}

// Replied says that the dialect answers the call ctx belongs to itself
// (Dispatcher.Reply, with CallOf's id): a handler or its deferred half
// returns what Replied returns, and the dispatcher sends no reply.
func Replied[R any](ctx context.Context) (*R, error) {
	stateOf(ctx, "Replied").replied = true
	return nil, nil
}
