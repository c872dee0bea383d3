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
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

// With --on-eof=abort, a run waiting for an approval when the client's
// input ends counts the approval as rejected by the closed input and ends
// cancelled: the rejection must not carry the run on to another model turn
// and completion before the abort lands. The two used to race (the
// rejection was delivered first, the abort after), so the test repeats.
func TestAbortAtEOFStopsARunWaitingForApproval(t *testing.T) {
	for i := range 60 {
		root := t.TempDir()
		script := `{"turns":[{"match":"write","steps":[{"toolCall":{"id":"w","name":"write","arguments":{"path":"x.txt","content":"x"}}}]},{"steps":[{"text":"went on"}]}]}`
		must(t, os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600))
		must(t, os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`), 0o600))
		eng, err := engine.New(engine.Options{DataRoot: root})
		must(t, err)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		srv := rpc.NewServer(eng, rpc.Options{OnEOF: engine.Abort})
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), inR, outW); outW.Close() }()
		c := &pipeClient{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: done}

		sid := c.newSession()
		c.readUntil(fmt.Sprintf(`"id":%d,`, c.send("session/set_permission", map[string]any{"sessionId": sid, "preset": "ask"})))
		c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": fmt.Sprint("r", i), "text": "write"})
		c.readUntil(`"method":"session/request_approval"`)
		inW.Close()
		var seen []string
		line := ""
		for !strings.Contains(line, `"method":"session/agent_settled"`) {
			line = c.readUntil("")
			seen = append(seen, strings.TrimSpace(line))
		}
		var n struct {
			Params struct {
				Outcome string `json:"outcome"`
			} `json:"params"`
		}
		must(t, json.Unmarshal([]byte(line), &n))
		go io.Copy(io.Discard, c.out)
		<-done
		if n.Params.Outcome != engine.OutcomeCancelled {
			t.Fatalf("round %d: the run settled %s, want cancelled:\n%s", i, n.Params.Outcome, strings.Join(seen, "\n"))
		}
	}
}
