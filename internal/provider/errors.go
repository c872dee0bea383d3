package provider

import (
	"errors"
	"fmt"
	"strings"
)

// Kinds of Error.
const (
	KindHTTP      = "http"      // the provider answered with an HTTP error status
	KindTruncated = "truncated" // the stream ended before its end marker
	KindNetwork   = "network"   // no response: connection refused, reset, DNS, TLS
	KindProvider  = "provider"  // the provider reported an error inside the stream
	KindScript    = "script"    // the scripted model's script is wrong or used up
)

// ErrTruncated matches (errors.Is) every *Error of kind KindTruncated.
var ErrTruncated = errors.New("model stream ended before its end marker")

// Error is a failed model call.
type Error struct {
	Kind      string
	Status    int    // HTTP status for KindHTTP
	Message   string // the provider's own message when it sent one; never holds a configured secret (Config.Secrets)
	Retryable bool   // the same request may succeed when sent again later
	Err       error  // the underlying cause, if any; its text is redacted as Message is

	// beforeOutput: the provider failed inside the stream before any
	// content started (Anthropic's overloaded error as the first event), so
	// a retry repeats nothing the caller saw.
	beforeOutput bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("model ")
	b.WriteString(e.Kind)
	b.WriteString(" error")
	if e.Status != 0 {
		fmt.Fprintf(&b, " %d", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap exposes the cause and, for truncated streams, ErrTruncated.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind == KindTruncated {
		errs = append(errs, ErrTruncated)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func truncatedError(cause error) *Error {
	msg := ErrTruncated.Error()
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{Kind: KindTruncated, Message: msg, Retryable: true, Err: cause}
}
