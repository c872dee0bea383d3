package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

// answeringClient is one connection to a server shared with others: a
// goroutine reads every line the server writes, answers each approval
// request (native session/request_approval or ACP
// session/request_permission) with an allowing decision and counts them,
// and hands every line on to lines.
type answeringClient struct {
	in    *io.PipeWriter
	lines chan string
	asked atomic.Int32
	id    int
}

func connect(t *testing.T, eng *engine.Engine) *answeringClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &answeringClient{in: inW, lines: make(chan string, 1024)}
	done := make(chan error, 1)
	go func() { done <- rpc.NewServer(eng, rpc.Options{}).Serve(context.Background(), inR, outW); outW.Close() }()
	read := make(chan struct{})
	go func() {
		defer close(read)
		out := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				close(c.lines)
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal([]byte(line), &req)
			switch req.Method {
			case "session/request_approval":
				c.asked.Add(1)
				c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"decision":"allowed-once"}}`, req.ID))
			case "session/request_permission":
				c.asked.Add(1)
				c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, req.ID))
			}
			select {
			case c.lines <- line:
			default: // nobody reads this connection's notifications any more
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		<-done
		<-read
	})
	return c
}

func (c *answeringClient) write(frame string) {
	_, _ = c.in.Write([]byte(frame + "\n"))
}

// call sends a request and returns its reply, passing over the lines
// before it.
func (c *answeringClient) call(t *testing.T, method string, params any) string {
	t.Helper()
	c.id++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	must(t, err)
	c.write(string(b))
	return c.until(t, fmt.Sprintf(`"id":%d,`, c.id))
}

// until returns the first line holding marker.
func (c *answeringClient) until(t *testing.T, marker string) string {
	t.Helper()
	for line := range c.lines {
		if strings.Contains(line, marker) {
			return line
		}
	}
	t.Fatalf("the connection ended before %s", marker)
	return ""
}

// approvalEngine is an engine whose model writes a file when the prompt
// says "write" (twice), a call the ask preset needs approved.
func approvalEngine(t *testing.T) *engine.Engine {
	t.Helper()
	root := t.TempDir()
	turn := `{"match":"write","steps":[{"toolCall":{"id":"w","name":"write","arguments":{"path":"x.txt","content":"x"}}}]},{"steps":[{"text":"done"}]}`
	script := `{"turns":[` + turn + `,` + turn + `]}`
	must(t, os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`), 0o600))
	eng, err := engine.New(engine.Options{DataRoot: root})
	must(t, err)
	return eng
}

// Two clients on one engine: the approval of a tool call made by a prompt
// that connection A sent goes to A's client, also when connection B came
// up after A (an engine-wide approver slot went to whichever bound last).
func TestApprovalGoesToTheConnectionThatStartedThePrompt(t *testing.T) {
	eng := approvalEngine(t)
	a := connect(t, eng)
	a.call(t, "initialize", map[string]any{})
	b := connect(t, eng)
	b.call(t, "initialize", map[string]any{})

	var ns struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	must(t, json.Unmarshal([]byte(a.call(t, "session/new", map[string]any{"workspaceId": nil})), &ns))
	sid := ns.Result.SessionID
	a.call(t, "session/set_permission", map[string]any{"sessionId": sid, "preset": "ask"})
	a.call(t, "session/prompt", map[string]any{"sessionId": sid, "requestId": "r1", "text": "write"})
	settled := a.until(t, `"method":"session/agent_settled"`)
	if !strings.Contains(settled, `"outcome":"completed"`) {
		t.Fatalf("the run did not complete: %s", settled)
	}
	if got, other := a.asked.Load(), b.asked.Load(); got != 1 || other != 0 {
		t.Fatalf("approval requests: %d to the connection that prompted, %d to the other; want 1 and 0", got, other)
	}
}

// The same with two dialects: an ACP client that connects after a native
// one does not answer the native client's approvals, nor the native client
// the ACP client's.
func TestApprovalGoesToTheDialectThatStartedThePrompt(t *testing.T) {
	eng := approvalEngine(t)
	native := connect(t, eng)
	native.call(t, "initialize", map[string]any{})
	editor := connect(t, eng)
	editor.call(t, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})

	var ns struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	must(t, json.Unmarshal([]byte(native.call(t, "session/new", map[string]any{"workspaceId": nil})), &ns))
	sid := ns.Result.SessionID
	native.call(t, "session/set_permission", map[string]any{"sessionId": sid, "preset": "ask"})
	native.call(t, "session/prompt", map[string]any{"sessionId": sid, "requestId": "r1", "text": "write"})
	settled := native.until(t, `"method":"session/agent_settled"`)
	if !strings.Contains(settled, `"outcome":"completed"`) {
		t.Fatalf("the native run did not complete: %s", settled)
	}
	if got, other := native.asked.Load(), editor.asked.Load(); got != 1 || other != 0 {
		t.Fatalf("approval requests: %d to the native client that prompted, %d to the ACP client; want 1 and 0", got, other)
	}

	// Now the editor prompts its own session, under the ask preset too.
	var acpNew struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	must(t, json.Unmarshal([]byte(editor.call(t, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})), &acpNew))
	editor.call(t, "session/set_mode", map[string]any{"sessionId": acpNew.Result.SessionID, "modeId": "ask"})
	reply := editor.call(t, "session/prompt", map[string]any{"sessionId": acpNew.Result.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "write"}}})
	if !strings.Contains(reply, `"stopReason":"end_turn"`) {
		t.Fatalf("the ACP prompt did not end its turn: %s", reply)
	}
	if got, other := editor.asked.Load(), native.asked.Load(); got != 1 || other != 1 {
		t.Fatalf("approval requests: %d to the ACP client that prompted, %d to the native client (1 of its own); want 1 and 1", got, other)
	}
}
