package rpctest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/rpc/rpctest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestRecordHandsOnEveryFrameInWireOrder: rpctest.Record sees what the
// script sends (a call, the answer to the server's request, a
// notification, raw bytes) and what the server writes, each response
// after its request, with the server's name and command line.
func TestRecordHandsOnEveryFrameInWireOrder(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/record",
		Cmds: rpctest.Cmds(),
		Setup: func(env *testscript.Env) error {
			if err := rpctest.Setup(env); err != nil {
				return err
			}
			var mu sync.Mutex
			var got []string
			rpctest.Record(env, func(f rpctest.Frame) {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				_ = json.Unmarshal(f.Body, &m)
				who := "script"
				if f.FromServer {
					who = "server"
				}
				kind := "raw"
				switch {
				case f.Raw:
				case m.Method != "" && m.ID != nil:
					kind = "request " + m.Method
				case m.Method != "":
					kind = "notification " + m.Method
				case m.Error != nil:
					kind = "error"
				default:
					kind = "result " + string(m.Result)
				}
				mu.Lock()
				got = append(got, fmt.Sprintf("%d %s %s: %s %s", f.Conn, f.Name, strings.Join(f.Args, " "), who, kind))
				mu.Unlock()
			})
			env.Defer(func() {
				want := []string{
					"1 default echoserver: script request ask",
					"1 default echoserver: server request client/ask",
					`1 default echoserver: script result {"ok":true}`,
					`1 default echoserver: server result {"answer":{"ok":true}}`,
					"1 default echoserver: script notification hello",
					"1 default echoserver: script raw",
					"1 default echoserver: server error",
					"1 default echoserver: server notification bye", // at stdin EOF
				}
				mu.Lock()
				defer mu.Unlock()
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					env.T().(interface{ Errorf(string, ...any) }).Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
			return nil
		},
		RequireExplicitExec: true,
	})
}
