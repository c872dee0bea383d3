package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

func TestRegressionGenerateTitleCancelledCode(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"purpose":"title","steps":[{"hang":true}]}]}`)
	s := h.newSession()
	r, _ := s.Prompt(engine.PromptInput{RequestID: "1", Text: "one"})
	h.settled(r.RunID)
	errc := make(chan error, 1)
	go func() { _, err := s.GenerateTitle(context.Background()); errc <- err }()
	for s.Snapshot().Operation != engine.OpTitle {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	t.Logf("GenerateTitle after abort: code=%s err=%v", engine.CodeOf(err), err)
	if engine.CodeOf(err) != engine.CodeCancelled {
		t.Errorf("want cancelled")
	}
}
