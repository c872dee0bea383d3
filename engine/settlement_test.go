package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
)

// TestWaitAndAbortCoverARunStillPublishingItsSettlement: a run goes idle
// before it publishes agent_settled and the state after it. Wait and Abort
// (and so Shutdown, which uses them) must not report the run over until
// those are published, or a front end that closes its connection next loses
// them (docs/protocol.md 2.6).
func TestWaitAndAbortCoverARunStillPublishingItsSettlement(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	publishing := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	unsub := h.e.Subscribe(func(ev engine.Event) {
		if ev.Kind == engine.EventAgentSettled && ev.SessionID == s.ID() {
			once.Do(func() {
				close(publishing)
				<-release
			})
		}
	})
	defer unsub()

	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	<-publishing
	if op := s.Snapshot().Operation; op != engine.OpIdle {
		t.Fatalf("operation %q while the settlement is published, want idle (the case this test is about)", op)
	}
	// A cancelled context makes the waits report instead of block: they
	// must say the run is not over yet.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Wait(gone); err == nil {
		t.Fatal("Wait returned nil while the run was still publishing its settlement")
	}
	if _, err := s.Abort(gone); err == nil {
		t.Fatal("Abort's wait returned while the run was still publishing its settlement")
	}
	close(release)
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
}
