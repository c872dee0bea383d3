package wire

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
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

// allocatedBy is the bytes f allocates (every goroutine's, so the
// stream's own goroutines must be idle meanwhile).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A request's params reach the handler as a slice of the frame it came
// in: neither the check of the frame nor jsonrpc2 copies them (jsonrpc2
// alone decoded them into interface{} values and encoded them again, a
// dozen times their size for a 4 MB prompt). Reading the line costs
// twice its size (bufio's pieces, then the line).
func TestARequestsParamsAreNotCopiedOnTheirWayIn(t *testing.T) {
	got := make(chan *json.RawMessage, 1)
	s := newServer(t, Options{Framing: NDJSON}, jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		got <- r.Params
		return true, nil
	}))
	text := strings.Repeat(`a pasted line with \"quotes\" and a \\ backslash\n`, 80000) // 4 MB as JSON
	params := `{"sessionId":"s","requestId":"r","text":"` + text + `"}`
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":` + params + "}\n")
	var p *json.RawMessage
	n := allocatedBy(func() {
		go func() { _, _ = s.in.Write(frame) }()
		select {
		case p = <-got:
		case <-time.After(60 * time.Second):
			t.Fatal("the handler was not called")
		}
	})
	if p == nil || string(*p) != params {
		t.Fatal("the handler did not get the params as sent")
	}
	if limit := uint64(3 * len(frame)); n > limit {
		t.Errorf("reading a %d-byte request allocated %d bytes, want at most %d", len(frame), n, limit)
	}
}
