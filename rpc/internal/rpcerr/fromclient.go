package rpcerr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sourcegraph/jsonrpc2"
)

// ClientError is the client's error answer to a request Loop sent it
// (an approval, a terminal, a file). Its text names the request and
// carries the client's message, never the JSON-RPC library's wording:
// the model and the user read it.
type ClientError struct {
	Method string
	Code   int64
	// Said is the client's message, followed by its error data when there
	// is any: ACP clients answer "Internal error" and put the reason (a
	// command that could not start) in data.
	Said string
}

func (e *ClientError) Error() string {
	if e.Said == "" {
		return fmt.Sprintf("the client answered %s with error code %d", e.Method, e.Code)
	}
	return fmt.Sprintf("the client answered %s with an error: %s", e.Method, e.Said)
}

// maxSaid bounds what of a client's error reaches the model.
const maxSaid = 1000

func said(re *jsonrpc2.Error) string {
	s := strings.TrimSpace(re.Message)
	if re.Data != nil && len(*re.Data) > 0 && string(*re.Data) != "null" {
		var buf bytes.Buffer
		if json.Compact(&buf, *re.Data) == nil {
			s = strings.TrimSpace(s + " " + buf.String())
		}
	}
	if len(s) > maxSaid {
		s = strings.ToValidUTF8(s[:maxSaid], "") + "…"
	}
	return s
}

// ErrClientGone reports a request whose answer cannot come any more: the
// connection closed first.
var ErrClientGone = errors.New("the connection to the client closed before it answered")

// FromClient rewrites what jsonrpc2 reports about a request Loop sent to
// the client (its dispatch or its wait) into an error fit for the model
// and the user. A context's error passes through unchanged, so callers can
// still tell a withdrawn request; an error answer becomes a *ClientError,
// a closed connection ErrClientGone, and an answer that does not decode
// (jsonrpc2 hands back encoding/json's error) a sentence naming the
// request.
func FromClient(method string, err error) error {
	var (
		re     *jsonrpc2.Error
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &re):
		return &ClientError{Method: method, Code: re.Code, Said: said(re)}
	case errors.Is(err, jsonrpc2.ErrClosed):
		return fmt.Errorf("%s: %w", method, ErrClientGone)
	case errors.As(err, &syntax), errors.As(err, &typ):
		return fmt.Errorf("the client's answer to %s is not what the protocol says: %s", method, strings.TrimPrefix(err.Error(), "json: "))
	}
	return fmt.Errorf("%s: %w", method, err)
}
