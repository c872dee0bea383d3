package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// `printf 'req1\nreq2\n' | loop`: input ends while both requests are still
// running; OnEOF finishes the work (and notifies), and both replies and the
// notification reach the output before the stream closes.
func TestEOFDrain(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *io.PipeWriter)
	}{
		{"eof", func(w *io.PipeWriter) { w.Close() }},
		{"read error", func(w *io.PipeWriter) { w.CloseWithError(errors.New("stdin broke")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var conn atomic.Pointer[jsonrpc2.Conn]
			var onEOF atomic.Int32
			handler := jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
				<-release // still running when input ends
				return r.Method, nil
			}))
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			s := New(inR, outW, Options{OnEOF: func(ctx context.Context) {
				onEOF.Add(1)
				conn.Load().Notify(ctx, "draining", nil)
				close(release)
			}})
			conn.Store(quietConn(s, handler))
			go func() {
				io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"req1"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"req2"}`+"\n")
				tc.end(inW)
			}()
			var lines []string
			within(t, "draining", func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines = append(lines, sc.Text())
				}
			})
			if len(lines) != 3 || lines[0] != `{"jsonrpc":"2.0","method":"draining"}` {
				t.Fatalf("output:\n%s", strings.Join(lines, "\n"))
			}
			replies := lines[1:]
			sort.Strings(replies)
			if replies[0] != `{"id":1,"result":"req1","jsonrpc":"2.0"}` || replies[1] != `{"id":2,"result":"req2","jsonrpc":"2.0"}` {
				t.Fatalf("replies: %v", replies)
			}
			within(t, "disconnect", func() { <-conn.Load().DisconnectNotify() })
			if onEOF.Load() != 1 {
				t.Fatalf("OnEOF ran %d times", onEOF.Load())
			}
		})
	}
}

func TestEOFDrainTimeout(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	handler := jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		<-never
		return nil, nil
	}))
	s := New(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"hang"}`), io.Discard, Options{DrainTimeout: 20 * time.Millisecond})
	conn := quietConn(s, handler)
	within(t, "disconnect", func() { <-conn.DisconnectNotify() })
}

// Input that ends before any byte still leaves a usable (NDJSON) stream.
func TestEOFBeforeAnyInput(t *testing.T) {
	outR, outW := io.Pipe()
	s := New(strings.NewReader("  \n"), outW, Options{})
	var obj map[string]any
	if err := s.ReadObject(&obj); err != io.EOF {
		t.Fatalf("ReadObject: %v", err)
	}
	if err := s.ReadObject(&obj); err != io.EOF {
		t.Fatalf("second ReadObject: %v", err)
	}
	if f := s.Framing(); f != NDJSON {
		t.Fatalf("framing %v", f)
	}
	s.WriteObject(&jsonrpc2.Request{Method: "bye", Notif: true})
	go s.Close()
	b, _ := io.ReadAll(outR)
	if string(b) != `{"jsonrpc":"2.0","method":"bye"}`+"\n" {
		t.Fatalf("got %q", b)
	}
}
