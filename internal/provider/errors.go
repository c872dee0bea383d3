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
	Message   string // the provider's own message when it sent one; never holds the API key
	Retryable bool   // the same request may succeed when sent again later
	Err       error  // the underlying cause, if any

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

// redact removes key from s, so that a provider echoing the key (or a
// base URL carrying it) never leaks it into an error. Only whole keys go:
// an occurrence inside a longer word is text that happens to contain a
// short key (a one-letter key must not blank out that letter everywhere).
func redact(s, key string) string {
	if key == "" || !strings.Contains(s, key) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			break
		}
		end := i + len(key)
		if (i == 0 || !inWord(s[i-1])) && (end == len(s) || !inWord(s[end])) {
			b.WriteString(s[:i])
			b.WriteString("[redacted]")
			s = s[end:]
			continue
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
	}
	b.WriteString(s)
	return b.String()
}

// inWord reports whether c can continue a key-like word: letters, digits,
// '-', '_', and any byte of a non-ASCII character.
func inWord(c byte) bool {
	return c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}
