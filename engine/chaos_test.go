package engine_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Four clients send random commands to one session at once. After every
// command the session's state machine and queue are consistent and its
// history is a valid conversation; at the end an abort leaves it idle,
// every accepted run settled exactly once, and no goroutine is left.
func TestConcurrentCommandsKeepTheSessionConsistent(t *testing.T) {
	before := goroutineIDs()
	turns := []string{}
	for i := range 600 {
		switch i % 4 {
		case 0:
			turns = append(turns, `{"steps":[{"sleepMs":2},{"text":"x"},{"toolCall":{"name":"ls","arguments":{}}}]}`)
		case 1:
			turns = append(turns, `{"purpose":"summary","steps":[{"sleepMs":3},{"text":"sum"}]}`)
		case 2:
			turns = append(turns, `{"purpose":"title","steps":[{"sleepMs":3},{"text":"T"}]}`)
		default:
			turns = append(turns, `{"steps":[{"sleepMs":3},{"text":"y"}]}`)
		}
	}
	h := newHarness(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	ev := newEventLog(h.e)
	s := h.newSession()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	resumes := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for n := range 250 {
				id := fmt.Sprintf("g%d-%d", g, n)
				what := ""
				switch rng.Intn(20) {
				case 0, 1, 2, 12, 13, 14:
					what = "prompt"
					s.Prompt(engine.PromptInput{RequestID: id, Text: "hi " + id})
				case 3:
					what = "abort"
					s.Abort(ctx)
				case 4:
					what = "compact"
					s.Compact(ctx)
				case 5:
					what = "generate_title"
					s.GenerateTitle(ctx)
				case 6:
					what = "pin"
					s.SetPinned(rng.Intn(2) == 0)
				case 7:
					what = "resume"
					if res, err := s.Resume(); err == nil {
						mu.Lock()
						resumes[res.RunID] = true
						mu.Unlock()
					}
				case 8, 15, 16, 17, 18, 19:
					what = "queue"
					q := s.Snapshot().State.Queue
					if len(q) > 0 {
						acts := []string{"edit", "move", "delete", "steer", "begin-edit", "cancel-edit"}
						txt := "e"
						s.Queue(engine.QueueAction{ID: q[rng.Intn(len(q))].ID, Action: acts[rng.Intn(len(acts))], Text: &txt})
					}
				case 9:
					what = "mark_read"
					s.MarkRead(s.Snapshot().State.MessageCount)
				case 10:
					what = "set_model"
					s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil)
				case 11:
					what = "set_permission"
					s.SetPermission("read-only")
				}
				// Other clients' requests may be half done here, so only
				// what holds at every instant is checked.
				if err := engine.Invariants(s, false); err != nil {
					t.Errorf("client %d, after %s %d: %v", g, what, n, err)
					return
				}
				snap := s.Snapshot()
				if err := validHistory(snap.State.Messages, snap.Operation != engine.OpPrompt); err != nil {
					t.Errorf("client %d, after %s %d: %v", g, what, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	snap, err := s.Abort(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gate := engine.QueueGate(s); gate == "paused" && snap.Operation != engine.OpIdle {
		t.Fatalf("the final abort paused the queue and left operation %q", snap.Operation)
	}
	// Empty the queue and stop what it started, until nothing is left.
	for range 100 {
		for _, it := range s.Snapshot().State.Queue {
			_, _ = s.Queue(engine.QueueAction{ID: it.ID, Action: engine.QueueDelete})
		}
		if snap, err = s.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if snap.Operation == engine.OpIdle && len(snap.State.Queue) == 0 {
			break
		}
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s.WaitForTitle()
	if err := engine.Invariants(s, true); err != nil {
		t.Fatal(err)
	}
	snap = s.Snapshot()
	if err := validHistory(snap.State.Messages, true); err != nil {
		t.Fatal(err)
	}
	if err := ev.check(s.ID(), resumes, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("final op=%s queue=%d msgs=%d runs=%v", snap.Operation, len(snap.State.Queue), len(snap.State.Messages), ev.outcomes(s.ID()))
	if err := h.e.Shutdown(ctx, engine.Drain); err != nil {
		t.Fatal(err)
	}
	noGoroutinesLeft(t, before)
}
