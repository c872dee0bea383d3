package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
	loopacp "github.com/loopdev/loop/rpc/internal/acp"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

const interopScript = `{"turns":[
 {"match":"look","steps":[{"thinking":"Listing first."},{"toolCall":{"id":"t1","name":"ls","arguments":{}}}]},
 {"match":"look","steps":[{"toolCall":{"id":"t2","name":"write","arguments":{"path":"note.txt","content":"hi\n"}}}]},
 {"match":"look","steps":[{"toolCall":{"id":"t3","name":"read","arguments":{"path":"note.txt"}}}]},
 {"match":"look","steps":[{"toolCall":{"id":"t4","name":"bash","arguments":{"command":"echo from-$((40+2)); cat note.txt"}}}]},
 {"match":"look","steps":[{"text":"Wrote note.txt."}]},
 {"purpose":"title","steps":[{"text":"Writing a note"}]},
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]}
]}`

// TestInteropTypeScriptSDK runs the official TypeScript SDK's client
// (testdata/interop/client.mjs, under node) against the agent and checks
// that every message validated against that SDK's schemas and that no
// session/update was dropped. It needs node and `npm ci` in
// testdata/interop (`make test` runs it); without them it is skipped, and
// under CI it fails.
func TestInteropTypeScriptSDK(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	node := nodeWithPackages(t, dir, "@agentclientprotocol/sdk")
	// The client's terminal is what this test exercises: told there is no
	// OS sandbox (which an editor's terminal can have only through the
	// loop binary's helper, acpx_test.go), ask mode's bash asks and runs
	// in the client's terminal.
	h := newHarnessSandboxed(t, configJSON, interopScript, &engine.SandboxStatus{Reason: "the interop test uses the client's terminal"})
	out := filepath.Join(t.TempDir(), "result.json")

	cmd := exec.Command(node, "client.mjs", h.work, out)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	toClient, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	fromClient, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	frames := &frameLog{}
	stream := wire.New(fromClient, writeCloser{io.MultiWriter(toClient, frames), toClient}, wire.Options{DrainTimeout: 2 * time.Second})
	agent := loopacp.New(h.eng, loopacp.Options{Version: "interop", Outbox: stream})
	conn := jsonrpc2.NewConn(context.Background(), stream, agent)
	agent.Bind(conn)

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node client: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("node client did not finish\n%s", stderr.String())
	}
	<-conn.DisconnectNotify()
	agent.Wait()
	agent.Close()

	var res struct {
		Problems       []string       `json:"problems"`
		Updates        int            `json:"updates"`
		Kinds          map[string]int `json:"kinds"`
		Permissions    int            `json:"permissions"`
		StopReasons    []string       `json:"stopReasons"`
		Titles         []string       `json:"titles"`
		Replayed       int            `json:"replayed"`
		LoadDeletedErr int            `json:"loadDeletedCode"`
		FsReads        int            `json:"fsReads"`
		FsWrites       int            `json:"fsWrites"`
		Terminals      int            `json:"terminals"`
		Released       int            `json:"released"`
		TerminalOutput string         `json:"terminalOutput"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("the TypeScript SDK's schemas reject or alter what the agent sent:\n%s\nstderr:\n%s", strings.Join(res.Problems, "\n"), stderr.String())
	}
	sent := 0
	for _, f := range frames.all() {
		if f["method"] == "session/update" {
			sent++
		}
	}
	if res.Updates != sent {
		t.Fatalf("the SDK handled %d of %d session/update notifications\nstderr:\n%s", res.Updates, sent, stderr.String())
	}
	for _, k := range []string{"agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "usage_update",
		"session_info_update", "current_mode_update", "config_option_update", "user_message_chunk"} {
		if res.Kinds[k] == 0 {
			t.Errorf("no %s reached the client: %v", k, res.Kinds)
		}
	}
	// Writes and bash ask in the ask mode: two permission requests.
	if res.Permissions != 2 || strings.Join(res.StopReasons, ",") != "end_turn,cancelled" || res.Replayed == 0 ||
		len(res.Titles) == 0 || res.LoadDeletedErr != -32002 {
		t.Fatalf("result: %s\nstderr:\n%s", b, stderr.String())
	}
	if data, err := os.ReadFile(filepath.Join(h.work, "note.txt")); err != nil || string(data) != "hi\n" {
		t.Fatalf("note.txt: %q %v", data, err)
	}
	// Files and the terminal went through the client, their requests
	// checked against the SDK's schemas.
	if res.FsWrites != 1 || res.FsReads == 0 || res.Terminals != 1 || res.Released != 1 || res.TerminalOutput != "from-42\nhi\n" {
		t.Fatalf("fs and terminal: %s\nstderr:\n%s", b, stderr.String())
	}
	t.Logf("%d updates validated: %v", sent, res.Kinds)
}

type writeCloser struct {
	io.Writer
	io.Closer
}
