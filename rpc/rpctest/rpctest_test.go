package rpctest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/loopdev/loop/rpc/rpctest"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/sourcegraph/jsonrpc2"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"echoserver": echoServer})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Cmds:                rpctest.Cmds(),
		Setup:               rpctest.Setup,
		RequireExplicitExec: true,
	})
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }

// echoServer is a small JSON-RPC server over stdin/stdout, built on
// rpc/internal/wire, with one method per thing the rpc command must handle.
func echoServer() {
	logger := log.New(os.Stderr, "echoserver: ", 0)
	// The handler is in place before the first frame is read: a script
	// sends SIGTERM once a reply has come (lifecycle.txtar), and one
	// installed after NewConn could miss it, leaving the default action
	// (death by the signal, not exit 3).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		logger.Print("terminated")
		os.Exit(3)
	}()
	// NewConn starts reading at once, so input can end (and a script that
	// saw a reply close stdin) before NewConn has returned: the hook waits
	// for the conn rather than skipping the bye the script waits for.
	var conn *jsonrpc2.Conn
	ready := make(chan struct{})
	stream := wire.New(stdio{}, stdio{}, wire.Options{
		OnEOF: func(ctx context.Context) {
			logger.Print("stdin closed")
			<-ready
			conn.Notify(ctx, "bye", nil)
		},
		Logf: logger.Printf,
	})
	conn = jsonrpc2.NewConn(context.Background(), stream, dispatcher{jsonrpc2.HandlerWithError(handle)}, jsonrpc2.SetLogger(logger))
	close(ready)
	<-conn.DisconnectNotify()
	logger.Print("exiting")
}

// dispatcher runs "ask" off the read loop, so the client's answer can be
// read while it waits, and everything else inline, in arrival order.
type dispatcher struct{ h jsonrpc2.Handler }

func (d dispatcher) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
	if r.Method == "ask" {
		go d.h.Handle(ctx, c, r)
		return
	}
	d.h.Handle(ctx, c, r)
}

type emitParams struct {
	Messages []struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"messages"`
	DelayMs int `json:"delayMs"`
}

func handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
	var params json.RawMessage
	if r.Params != nil {
		params = *r.Params
	}
	switch r.Method {
	case "echo":
		if params == nil {
			return map[string]any{}, nil
		}
		return params, nil
	case "fail":
		var p struct {
			Code    int64          `json:"code"`
			Kind    string         `json:"kind"`
			Message string         `json:"message"`
			Extra   map[string]any `json:"extra"`
		}
		json.Unmarshal(params, &p)
		return nil, wire.NewError(p.Code, p.Kind, p.Message, p.Extra)
	case "emit":
		// Notifications, then the reply: the order a prompt produces.
		var p emitParams
		json.Unmarshal(params, &p)
		for _, m := range p.Messages {
			c.Notify(ctx, m.Method, m.Params)
		}
		return map[string]int{"sent": len(p.Messages)}, nil
	case "emit-later":
		// The reply first, then the notifications after a delay.
		var p emitParams
		json.Unmarshal(params, &p)
		go func() {
			time.Sleep(time.Duration(p.DelayMs) * time.Millisecond)
			for _, m := range p.Messages {
				c.Notify(ctx, m.Method, m.Params)
			}
		}()
		return map[string]int{"queued": len(p.Messages)}, nil
	case "ask":
		// A request to the client, answered while ours waits (dispatcher
		// runs this off the read loop), or, with "notify", answered later
		// and reported in that notification.
		var p struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Notify string          `json:"notify"`
		}
		json.Unmarshal(params, &p)
		done := make(chan any, 1)
		go func() {
			var answer json.RawMessage
			var out any
			if err := c.Call(ctx, p.Method, p.Params, &answer); err != nil {
				out = map[string]any{"error": err}
			} else {
				out = map[string]any{"answer": answer}
			}
			if p.Notify != "" {
				c.Notify(ctx, p.Notify, out)
			}
			done <- out
		}()
		if p.Notify != "" {
			return map[string]bool{"asking": true}, nil
		}
		return <-done, nil
	case "env":
		var names []string
		json.Unmarshal(params, &names)
		out := map[string]string{}
		for _, n := range names {
			out[n] = os.Getenv(n)
		}
		wd, _ := os.Getwd()
		out["cwd"] = wd
		return out, nil
	case "log":
		var p struct{ Text string }
		json.Unmarshal(params, &p)
		fmt.Fprintln(os.Stderr, p.Text)
		return true, nil
	case "stdout-junk":
		fmt.Fprintln(os.Stdout, "this is not JSON")
		return true, nil
	case "exit":
		var p struct{ Code int }
		json.Unmarshal(params, &p)
		os.Exit(p.Code)
	}
	return nil, wire.NewError(wire.MethodNotFound, "method_not_found", "no method "+r.Method, nil)
}

var _ io.Reader = stdio{}
