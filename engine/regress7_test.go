package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// The abort's wait loops on s.run: a prompt accepted after the abort makes
// the abort's reply wait for that whole new run.
func TestRegressionAbortWaitsForLaterRun(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"one","steps":[{"hang":true}]},
		{"match":"two","steps":[{"sleepMs":1500},{"text":"a2"}]}]}`)
	s := h.newSession()
	r1, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	time.Sleep(20 * time.Millisecond)
	wait := s.RequestAbort()
	h.settled(r1.RunID)
	r2, err := s.Prompt(engine.PromptInput{RequestID: "2", Text: "two"})
	if err != nil || r2.Queued {
		t.Fatalf("%+v %v", r2, err)
	}
	start := time.Now()
	snap, err := wait(context.Background())
	t.Logf("abort wait took %v; operation=%q", time.Since(start), snap.Operation)
	if time.Since(start) > time.Second {
		t.Errorf("abort's reply waited for a run started after it")
	}
}
