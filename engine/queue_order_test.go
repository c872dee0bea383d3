package engine_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// Many sessions at once, each sent r0 and r1, then r2 and r3 in a burst
// the moment r0 settles (a client that sends on agent_settled): every
// session's prompts run in the order they were accepted. r2 lands while r1
// waits in the queue and the run ahead of it is letting go of the
// session; it must join the queue behind r1, not start beside the queue.
func TestQueuedPromptsRunInAcceptanceOrderUnderLoad(t *testing.T) {
	const sessions, rounds = 100, 3
	want := []string{"r0", "r1", "r2", "r3"}
	turns := make([]string, sessions*len(want)*rounds)
	for i := range turns {
		turns[i] = `{"steps":[{"text":"ok"}]}`
	}
	h := newHarness(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	bad := 0
	for round := range rounds {
		ss := make([]*engine.Session, sessions)
		firstSettled := map[string]chan struct{}{}
		for i := range ss {
			ss[i] = h.newSession()
			firstSettled[ss[i].ID()] = make(chan struct{})
		}
		var mu sync.Mutex
		settled, all := 0, make(chan struct{})
		unsubscribe := h.e.Subscribe(func(ev engine.Event) {
			p, ok := ev.Payload.(*engine.AgentSettledEvent)
			if !ok {
				return
			}
			if p.RequestID == "r0" {
				close(firstSettled[p.SessionID])
			}
			mu.Lock()
			defer mu.Unlock()
			if settled++; settled == sessions*len(want) {
				close(all)
			}
		})
		results := make([][]engine.PromptResult, sessions)
		var ready, wg sync.WaitGroup
		ready.Add(1)
		for i, s := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ready.Wait()
				for k, id := range want {
					if k == 2 {
						<-firstSettled[s.ID()]
					}
					res, err := s.Prompt(engine.PromptInput{RequestID: id, Text: id})
					if err != nil {
						t.Errorf("round %d session %d prompt %s: %v", round, i, id, err)
						return
					}
					results[i] = append(results[i], res)
				}
			}()
		}
		ready.Done()
		wg.Wait()
		select {
		case <-all:
		case <-time.After(time.Minute):
			mu.Lock()
			t.Fatalf("round %d: only %d of %d runs settled", round, settled, sessions*len(want))
		}
		unsubscribe()
		for i, s := range ss {
			var order []string
			for _, m := range s.Snapshot().State.Messages {
				if m.Role == convo.RoleUser {
					order = append(order, m.RequestID)
				}
			}
			if strings.Join(order, ",") != strings.Join(want, ",") {
				if bad++; bad > 5 {
					continue
				}
				var queued []bool
				for _, res := range results[i] {
					queued = append(queued, res.Queued)
				}
				t.Errorf("round %d session %d: history order %v, queued %v", round, i, order, queued)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d sessions ran prompts out of order", bad, sessions*rounds)
	}
}
