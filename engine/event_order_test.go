package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
)

// sessionEventLog records what one subscriber received, per session.
type sessionEventLog struct {
	mu   sync.Mutex
	by   map[string][]engine.Event
	seen int
}

func (l *sessionEventLog) add(ev engine.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]engine.Event{}
	}
	l.by[ev.SessionID] = append(l.by[ev.SessionID], ev)
}

func (l *sessionEventLog) of(id string) []engine.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.by[id])
}

// Several sessions run queued prompts while other goroutines pin and unpin
// them. Each session's events must reach every subscriber in one order
// that makes sense: a run is accepted before its messages and settles
// after them, a message starts before its deltas and ends after them, the
// runs start in the order their prompts were accepted, no state event
// shows a run running after it settled, and the last state and queue
// events show the state the session ended in (an older view delivered
// after a newer one would show something else).
func TestEventsOfOneSessionStayInOrder(t *testing.T) {
	const sessions, prompts = 3, 8
	turn := `{"steps":[{"text":"a"},{"text":"b"},{"text":"c"}]}`
	h := newHarness(t, `{"turns":[`+strings.TrimSuffix(strings.Repeat(turn+",", sessions*prompts), ",")+`]}`)
	var first, second sessionEventLog
	h.e.Subscribe(first.add)
	h.e.Subscribe(second.add)

	var ss []*engine.Session
	for range sessions {
		ss = append(ss, h.newSession())
	}
	runs := map[string][]string{} // session -> run ids in acceptance order
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, s := range ss {
		// Two pinners per session, until every run settled: each pin
		// publishes a state event that races the runs' own.
		for range 2 {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.SetPinned(k%2 == 0); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for i := range prompts {
			r, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprint(i), Text: fmt.Sprint("prompt ", i)})
			if err != nil {
				t.Fatal(err)
			}
			runs[s.ID()] = append(runs[s.ID()], r.RunID)
		}
	}
	for _, s := range ss {
		for _, id := range runs[s.ID()] {
			if got := h.settled(id); got.Outcome != engine.OutcomeCompleted {
				t.Fatalf("run %s: %+v", id, got)
			}
		}
	}
	close(stop)
	wg.Wait()
	for _, s := range ss {
		if err := s.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	for _, s := range ss {
		evs := first.of(s.ID())
		if other := second.of(s.ID()); !slices.EqualFunc(evs, other, func(a, b engine.Event) bool { return a.Payload == b.Payload }) {
			t.Fatalf("session %s: the two subscribers got its events in different orders", s.ID())
		}
		checkRunGrammar(t, s.ID(), evs, runs[s.ID()])

		final := s.Snapshot()
		var lastState *engine.Snapshot
		var lastQueue []engine.QueueItem
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *engine.StateEvent:
				lastState = p.Snapshot()
			case *engine.QueueChangedEvent:
				lastQueue = p.Queue
			}
		}
		if lastState == nil {
			t.Fatalf("session %s: no state event", s.ID())
		}
		if lastState.Operation != engine.OpIdle || (lastState.State.PinnedAt == nil) != (final.State.PinnedAt == nil) ||
			lastState.State.MessageCount != final.State.MessageCount || len(lastState.State.Queue) != 0 {
			t.Fatalf("session %s: the last state event shows operation %q, pinned %v, %d messages, %d queued; the session ended %q, pinned %v, %d messages",
				s.ID(), lastState.Operation, lastState.State.PinnedAt != nil, lastState.State.MessageCount, len(lastState.State.Queue),
				final.Operation, final.State.PinnedAt != nil, final.State.MessageCount)
		}
		if len(lastQueue) != 0 {
			t.Fatalf("session %s: the last queue event still holds %d items", s.ID(), len(lastQueue))
		}
	}
}

// checkRunGrammar checks the order of one session's run and message events.
func checkRunGrammar(t *testing.T, sessionID string, evs []engine.Event, runIDs []string) {
	t.Helper()
	accepted := map[string]bool{}
	settled := map[string]bool{}
	open := map[string]bool{} // messages started and not ended
	ended := map[string]bool{}
	var order []string
	for i, ev := range evs {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("session %s, event %d (%s): %s", sessionID, i, ev.Kind, fmt.Sprintf(format, args...))
		}
		switch p := ev.Payload.(type) {
		case *engine.RunAcceptedEvent:
			if accepted[p.RunID] {
				fail("run %s accepted twice", p.RunID)
			}
			accepted[p.RunID] = true
			order = append(order, p.RunID)
		case *engine.MessageEvent:
			if !accepted[p.RunID] || settled[p.RunID] {
				fail("a message of run %s outside the run", p.RunID)
			}
			switch p.Event {
			case "start":
				if open[p.MessageID] || ended[p.MessageID] {
					fail("message %s started twice", p.MessageID)
				}
				open[p.MessageID] = true
			case "delta":
				if !open[p.MessageID] {
					fail("a delta of message %s outside it", p.MessageID)
				}
			case "end":
				if !open[p.MessageID] {
					fail("message %s ended without starting", p.MessageID)
				}
				delete(open, p.MessageID)
				ended[p.MessageID] = true
			}
		case *engine.AgentSettledEvent:
			if !accepted[p.RunID] || settled[p.RunID] {
				fail("run %s settled without being accepted, or twice", p.RunID)
			}
			for id := range open {
				if strings.HasPrefix(id, p.RunID+"/") {
					fail("run %s settled with message %s open", p.RunID, id)
				}
			}
			settled[p.RunID] = true
		case *engine.StateEvent:
			if p.Snapshot().Operation == engine.OpPrompt && settled[p.Snapshot().RunID] {
				fail("a state event shows run %s running after it settled", p.Snapshot().RunID)
			}
		}
	}
	if !slices.Equal(order, runIDs) {
		t.Fatalf("session %s: runs started in the order %v, accepted as %v", sessionID, order, runIDs)
	}
}
