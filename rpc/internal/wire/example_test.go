package wire_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"

	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// A server on a Stream: the handler runs off the read loop (as a prompt
// would), and what one goroutine sends reaches the client in order: its
// notifications, then its reply. Malformed input is answered and skipped.
func Example() {
	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()

	stream := wire.New(clientOut, clientIn, wire.Options{})
	handler := jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(
		func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
			if r.Method != "session/prompt" {
				return nil, wire.NewError(wire.MethodNotFound, "method_not_found", "no method "+r.Method, nil)
			}
			for i, text := range []string{"Hel", "lo"} {
				c.Notify(ctx, "session/message", map[string]any{"event": "delta", "block": 0, "delta": text, "seq": i})
			}
			return map[string]bool{"queued": false}, nil
		}))
	conn := jsonrpc2.NewConn(context.Background(), stream, handler, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))

	out := bufio.NewScanner(serverOut)
	go fmt.Fprintln(serverIn, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"text":"hi"}}`)
	for range 3 {
		out.Scan()
		fmt.Println(out.Text())
	}
	go func() {
		fmt.Fprintln(serverIn, `{"jsonrpc":"2.0","id":2,"method":`)
		serverIn.Close() // EOF: the stream answers what it read, then closes
	}()
	for out.Scan() {
		fmt.Println(out.Text())
	}
	<-conn.DisconnectNotify()
	// Output:
	// {"jsonrpc":"2.0","method":"session/message","params":{"block":0,"delta":"Hel","event":"delta","seq":0}}
	// {"jsonrpc":"2.0","method":"session/message","params":{"block":0,"delta":"lo","event":"delta","seq":1}}
	// {"id":1,"result":{"queued":false},"jsonrpc":"2.0"}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: input ended inside a JSON value","data":{"code":"parse_error"}}}
}
