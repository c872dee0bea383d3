package wire

import (
	"context"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Handlers get params exactly as the client sent them: jsonrpc2 alone
// would decode and marshal them again, replacing invalid UTF-8 and
// unpaired surrogates with U+FFFD, sorting keys and escaping HTML.
func TestHandlersSeeParamsAsSent(t *testing.T) {
	got := make(chan string, 2)
	s := newServer(t, Options{}, jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		if r.Params == nil {
			got <- "<nil>"
		} else {
			got <- string(*r.Params)
		}
		return true, nil
	}))
	const params = "{\"z\":\"x\\ud800 \xff <&>\",  \"a\": [1.50, \"\\u00e9\"]}"
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":` + params + "}\n",
		`{"jsonrpc":"2.0","method":"n","params":` + params + "}\n",
	} {
		s.send(frame)
		select {
		case p := <-got:
			if p != params {
				t.Errorf("handler got params %q, want %q", p, params)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler was not called")
		}
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"m","params":null}` + "\n")
	if p := <-got; p != "null" {
		t.Errorf("null params: handler got %q", p)
	}
}
