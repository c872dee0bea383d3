package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// server is a Stream plus jsonrpc2.Conn fed by the test through pipes.
type server struct {
	t      *testing.T
	in     *io.PipeWriter // the test writes client bytes here
	out    *bufio.Reader  // and reads the server's bytes here
	stream *Stream
	conn   *jsonrpc2.Conn
}

// echo answers "echo" with its params, "notify" by sending params.n
// notifications "tick" first, and anything else with method_not_found.
func echo(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
	switch r.Method {
	case "echo":
		if r.Params == nil {
			return nil, nil
		}
		return r.Params, nil
	case "size":
		return map[string]int{"len": len(*r.Params)}, nil
	case "big":
		var n []int
		json.Unmarshal(*r.Params, &n)
		return strings.Repeat("x", n[0]), nil
	case "notify":
		var p struct{ N int }
		if r.Params != nil {
			json.Unmarshal(*r.Params, &p)
		}
		for i := range p.N {
			if err := c.Notify(ctx, "tick", map[string]int{"i": i}); err != nil {
				return nil, err
			}
		}
		return map[string]int{"sent": p.N}, nil
	}
	return nil, NewError(MethodNotFound, "method_not_found", "no method "+r.Method, nil)
}

func newServer(t *testing.T, opts Options, h jsonrpc2.Handler) *server {
	t.Helper()
	if h == nil {
		h = jsonrpc2.HandlerWithError(echo)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &server{t: t, in: inW, out: bufio.NewReader(outR)}
	s.stream = New(inR, outW, opts)
	s.conn = jsonrpc2.NewConn(context.Background(), s.stream, h, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		s.conn.Close()
	})
	return s
}

func (s *server) send(text string) {
	s.t.Helper()
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(s.in, text); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Fatalf("writing input: %v", err)
		}
	case <-time.After(60 * time.Second):
		s.t.Fatalf("writing input blocked: the stream stopped reading")
	}
}

// lsp frames a body the way an LSP client does.
func lsp(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// readFrame reads one frame in the given framing, failing after 10s (a
// deadlock guard, not a timing assertion).
func (s *server) readFrame(f Framing) string {
	s.t.Helper()
	type res struct {
		body string
		err  error
	}
	done := make(chan res, 1)
	go func() {
		b, err := readFrame(s.out, f)
		done <- res{b, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			s.t.Fatalf("reading output: %v", r.err)
		}
		return r.body
	case <-time.After(60 * time.Second):
		s.t.Fatalf("no output within 60s")
	}
	return ""
}

func readFrame(br *bufio.Reader, f Framing) (string, error) {
	if f == NDJSON {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(line, "\n"), nil
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	var n int
	if _, err := fmt.Sscanf(line, "Content-Length: %d\r\n", &n); err != nil {
		return "", fmt.Errorf("bad header %q: %w", line, err)
	}
	if blank, err := br.ReadString('\n'); err != nil || blank != "\r\n" {
		return "", fmt.Errorf("header block not ended by CRLF: %q %v", blank, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// expect reads one frame and compares it to want after normalising both.
func (s *server) expect(f Framing, want string) {
	s.t.Helper()
	got := s.readFrame(f)
	if norm(s.t, got) != norm(s.t, want) {
		s.t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func norm(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// errorOf parses an error reply and returns its id, code and data.code.
func errorOf(t *testing.T, body string) (id string, code int64, dataCode string) {
	t.Helper()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Error == nil || r.JSONRPC != "2.0" {
		t.Fatalf("not an error reply: %s", body)
	}
	return string(r.ID), r.Error.Code, r.Error.Data.Code
}

// The streams the tests merge, named as the native dialect names them
// (rpc/notification.go).
const (
	deltaMethod    = "session/message"
	progressMethod = "session/tool"
)

var mergeDeltas = MergeText(
	TextStream{Method: deltaMethod, Event: "delta", Field: "delta"},
	TextStream{Method: progressMethod, Event: "progress", Field: "progress"},
)
