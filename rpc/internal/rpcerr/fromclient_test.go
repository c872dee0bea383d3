package rpcerr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// TestFromClientKeepsTheClientsWordsAndNoLibraryName: whatever jsonrpc2
// reports about a request to the client, the text the model and the user
// read names the request and says what the client said, never "jsonrpc2:"
// or "json:"; a context's error stays itself.
func TestFromClientKeepsTheClientsWordsAndNoLibraryName(t *testing.T) {
	data := json.RawMessage(`{ "details": "spawn ENOENT" }`)
	var decodeErr error
	var v struct{ Decision string }
	decodeErr = json.Unmarshal([]byte(`{"Decision":5}`), &v)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&jsonrpc2.Error{Code: -32000, Message: "no way"}, "the client answered m/x with an error: no way"},
		{fmt.Errorf("wrapped: %w", &jsonrpc2.Error{Code: -32603, Message: "Internal error", Data: &data}), `the client answered m/x with an error: Internal error {"details":"spawn ENOENT"}`},
		{&jsonrpc2.Error{Code: -32001}, "the client answered m/x with error code -32001"},
		{jsonrpc2.ErrClosed, "m/x: the connection to the client closed before it answered"},
		{decodeErr, "the client's answer to m/x is not what the protocol says: cannot unmarshal number"},
	} {
		got := FromClient("m/x", tc.err).Error()
		if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "jsonrpc2") || strings.Contains(got, "json:") {
			t.Errorf("FromClient(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if err := FromClient("m/x", context.Canceled); err != context.Canceled {
		t.Errorf("a cancelled request became %v", err)
	}
	if FromClient("m/x", nil) != nil {
		t.Error("nil became an error")
	}
	var ce *ClientError
	if !errors.As(FromClient("m/x", &jsonrpc2.Error{Code: 1, Message: "m"}), &ce) || ce.Said != "m" {
		t.Errorf("not a *ClientError: %v", ce)
	}
	long := &jsonrpc2.Error{Message: strings.Repeat("é", maxSaid)}
	if got := FromClient("m/x", long).(*ClientError).Said; len(got) > maxSaid+len("…") {
		t.Errorf("a long message kept %d bytes", len(got))
	}
}
