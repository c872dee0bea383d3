package acp_test

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/loopdev/loop/engine"
)

const clientErrorScript = `{"turns":[
 {"match":"write","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"A\n"}}}]},
 {"match":"write","steps":[{"text":"not written"}]},
 {"match":"run","steps":[{"toolCall":{"id":"b1","name":"bash","arguments":{"command":"echo hi there"}}}]},
 {"match":"run","steps":[{"text":"did not run"}]}
]}`

// TestClientErrorAnswersReachTheModelInTheClientsWords: an error answer to
// session/request_permission is a rejection, and the model reads the
// documented rejection and the client's words; an error answer to
// terminal/create reaches the model as the client's words too. Neither
// carries the JSON-RPC library's "jsonrpc2:" wording.
func TestClientErrorAnswersReachTheModelInTheClientsWords(t *testing.T) {
	h := newHarness(t, clientErrorScript)
	c := h.connect()
	c.initializeWith(sdk.ClientCapabilities{Terminal: true})
	ns := c.newSession()
	sess, err := h.eng.Session(string(ns.SessionId))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	c.rec.answerErr = &sdk.RequestError{Code: -32000, Message: "the user closed the dialog"}
	if stop := c.mustPrompt(ns.SessionId, "write"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	snap := sess.Snapshot()
	if got, want := toolResult(t, snap.State.Messages, "w1"), "The user rejected this tool call. The client said: the user closed the dialog"; got != want {
		t.Fatalf("write result %q, want %q", got, want)
	}
	if snap.LastApproval == nil || snap.LastApproval.Decision != engine.DecisionRejected {
		t.Fatalf("lastApproval %+v", snap.LastApproval)
	}

	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "full-access"}); err != nil {
		t.Fatal(err)
	}
	c.rec.edMu.Lock()
	c.rec.createErr = sdk.NewInternalError(map[string]any{"details": "spawn echo hi there ENOENT"})
	c.rec.edMu.Unlock()
	if stop := c.mustPrompt(ns.SessionId, "run"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	got := toolResult(t, sess.Snapshot().State.Messages, "b1")
	if !strings.Contains(got, "the client answered terminal/create with an error: Internal error") || !strings.Contains(got, "spawn echo hi there ENOENT") {
		t.Fatalf("bash result %q", got)
	}
	for _, m := range sess.Snapshot().State.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, "jsonrpc2") {
				t.Fatalf("the model read the library's name: %q", b.Text)
			}
		}
	}
}
