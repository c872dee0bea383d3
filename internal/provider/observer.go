package provider

import (
	"context"
	"net/http"
)

// Observer sees every HTTP attempt of one request as it happens (the
// session's trace records them: docs/traces.md). Its methods run on the
// goroutine that streams the request and must not block on I/O.
type Observer interface {
	// Request: an attempt is about to be sent with these headers (the
	// key included: the observer removes it) and this exact body. The
	// body is not changed afterwards: the observer may keep it (a trace
	// records the next body as a change of this one); a long one it reads
	// in pieces (Body.WriteTo).
	Request(attempt int, url string, header http.Header, body Body)
	// Response: the attempt's status line arrived.
	Response(attempt, status int)
	// Body: bytes of a 2xx body, as read.
	Body(attempt int, p []byte)
	// End: the attempt is over; err is nil when its stream was complete.
	End(attempt int, err error)
}

type observerKey struct{}

// WithObserver returns ctx with o watching the requests streamed under it.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverFrom returns the observer of ctx, or nil.
func ObserverFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// IsRetryable reports whether the request may succeed when tried again.
func (e *Error) IsRetryable() bool { return e.Retryable }
