package acp_test

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

const reviewCancelScript = `{"turns":[
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]},
 {"match":"next","steps":[{"text":"second answer"}]}
]}`

// Regression: a prompt sent right after session/cancel, while the
// cancelled run was still winding down, queued behind it in the queue the
// abort had paused, and was never answered.
func TestPromptAfterCancelNeverAnswered(t *testing.T) {
	h := newHarness(t, reviewCancelScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)
	first := make(chan sdk.StopReason, 1)
	go func() { r, _ := c.prompt(ns.SessionId, "slow"); first <- r.StopReason }()
	waitFor(t, "first chunk", func() bool { return strings.Contains(dump(fold(c.frames.updates(sid), true).Messages), "working") })
	if err := c.cs.Cancel(ctx(t), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	second := make(chan string, 1)
	go func() { r, err := c.prompt(ns.SessionId, "next"); second <- string(r.StopReason) + errString(err) }()
	if got := <-first; got != sdk.StopReasonCancelled {
		t.Fatalf("first: %q", got)
	}
	sess, _ := h.eng.Session(sid)
	select {
	case got := <-second:
		t.Logf("second answered: %s", got)
	case <-time.After(time.Minute): // a hang guard
		snap := sess.Snapshot()
		t.Fatalf("second prompt never answered: op=%s queue=%d", snap.Operation, len(snap.State.Queue))
	}
}
