package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loopdev/loop/engine"
)

// No session/state event delivered after a run's agent_settled shows that
// run still holding the session, even while other requests (pins) publish
// state all along: a state event is built when it is delivered, never
// before (snapshots used to be taken outside the emit lock).
func TestNoStateEventShowsASettledRunHoldingTheSession(t *testing.T) {
	turns := []string{}
	for range 200 {
		turns = append(turns, `{"steps":[{"text":"x"}]}`)
	}
	h := newHarness(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	s := h.newSession()
	var settled sync.Map
	var stale atomic.Int32
	h.e.Subscribe(func(ev engine.Event) {
		switch p := ev.Payload.(type) {
		case *engine.AgentSettledEvent:
			settled.Store(p.RunID, true)
		case *engine.StateEvent:
			if p.Snapshot().Operation == engine.OpPrompt {
				if _, ok := settled.Load(p.Snapshot().RunID); ok {
					stale.Add(1)
				}
			}
		}
	})
	for i := range 150 {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = s.SetPinned(k%2 == 0)
				}
			}()
		}
		r, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprint(i), Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		h.settled(r.RunID)
		close(stop)
		wg.Wait()
		if stale.Load() > 0 {
			t.Fatalf("after %d runs, %d session/state events showed a settled run still holding the session", i+1, stale.Load())
		}
	}
}
