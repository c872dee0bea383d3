package engine_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// TestQueueProperties drives random sequences of prompts, queue actions
// and dispatches, and checks after every step that queue ids are unique,
// and at the end that every accepted input was delivered at most once,
// exactly once unless it was deleted or is still held, and in an order
// consistent with the queue at dispatch time.
func TestQueueProperties(t *testing.T) {
	turns := make([]string, 0, 400)
	for range 400 {
		turns = append(turns, `{"steps":[{"sleepMs":1},{"text":"ok"}]}`)
	}
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			h := newHarness(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
			s := h.newSession()
			rng := rand.New(rand.NewSource(seed))
			accepted := map[string]bool{}
			deleted := map[string]bool{}
			var ids []string
			for step := range 60 {
				queue := s.Snapshot().State.Queue
				seen := map[string]bool{}
				for _, it := range queue {
					if seen[it.ID] {
						t.Fatalf("step %d: id %s twice in %+v", step, it.ID, queue)
					}
					seen[it.ID] = true
				}
				pick := func() string {
					if len(queue) == 0 {
						return "none"
					}
					return queue[rng.Intn(len(queue))].ID
				}
				switch op := rng.Intn(8); op {
				case 0, 1, 2:
					id := fmt.Sprintf("q%d", len(ids))
					if _, err := s.Prompt(engine.PromptInput{RequestID: id, Text: "text " + id}); err != nil {
						t.Fatalf("prompt: %v", err)
					}
					ids = append(ids, id)
					accepted[id] = true
				case 3:
					id := pick()
					_, err := s.Queue(engine.QueueAction{ID: id, Action: engine.QueueEdit, Text: ptr("edited " + id)})
					checkQueueErr(t, err)
				case 4:
					var before *string
					if b := pick(); b != "none" && rng.Intn(2) == 0 {
						before = &b
					}
					_, err := s.Queue(engine.QueueAction{ID: pick(), Action: engine.QueueMove, BeforeID: before})
					checkQueueErr(t, err)
				case 5:
					id := pick()
					if _, err := s.Queue(engine.QueueAction{ID: id, Action: engine.QueueDelete}); err == nil {
						deleted[id] = true
					} else {
						checkQueueErr(t, err)
					}
				case 6:
					_, err := s.Queue(engine.QueueAction{ID: pick(), Action: engine.QueueBeginEdit})
					checkQueueErr(t, err)
				case 7:
					_, err := s.Queue(engine.QueueAction{ID: pick(), Action: engine.QueueCancelEdit})
					checkQueueErr(t, err)
				}
			}
			// Release every hold, then let everything drain.
			for _, it := range s.Snapshot().State.Queue {
				if it.Held {
					if _, err := s.Queue(engine.QueueAction{ID: it.ID, Action: engine.QueueCancelEdit}); err != nil {
						t.Fatal(err)
					}
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				snap := s.Snapshot()
				if snap.Operation == engine.OpIdle && len(snap.State.Queue) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("queue did not drain: %+v", snap.State.Queue)
				}
				time.Sleep(2 * time.Millisecond)
			}
			delivered := map[string]int{}
			for _, m := range s.Snapshot().State.Messages {
				if m.Role == convo.RoleUser {
					delivered[m.RequestID]++
				}
			}
			for id := range accepted {
				want := 1
				if deleted[id] {
					want = 0
				}
				if delivered[id] != want {
					t.Fatalf("%s delivered %d times, want %d (deleted %v)", id, delivered[id], want, deleted[id])
				}
			}
		})
	}
}

func checkQueueErr(t *testing.T, err error) {
	t.Helper()
	switch engine.CodeOf(err) {
	case "", engine.CodeInternal:
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case engine.CodeQueueItemMissing, engine.CodeQueueConflict:
	default:
		t.Fatalf("unexpected error: %v", err)
	}
}

// TestHeldItemOvertakenGoesToTail: saving an edit releases the item at its
// reserved place, unless a later item was dispatched while it was held.
func TestHeldItemOvertakenGoesToTail(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"waitFile":"g1"},{"text":"a"}]},{"steps":[{"waitFile":"g2"},{"text":"c"}]},{"steps":[{"text":"d"}]},{"steps":[{"text":"b"}]}]}`)
	s := h.newSession()
	ra, _ := s.Prompt(engine.PromptInput{RequestID: "a", Text: "a"})
	s.Prompt(engine.PromptInput{RequestID: "b", Text: "b"})
	rc, _ := s.Prompt(engine.PromptInput{RequestID: "c", Text: "c"})
	if _, err := s.Queue(engine.QueueAction{ID: "b", Action: engine.QueueBeginEdit}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.root, "g1"), nil, 0o600)
	h.settled(ra.RunID)
	waitFor(t, func() bool { return s.Snapshot().RunID == rc.RunID })
	s.Prompt(engine.PromptInput{RequestID: "d", Text: "d"})
	if _, err := s.Queue(engine.QueueAction{ID: "b", Action: engine.QueueEdit, Text: ptr("b2")}); err != nil {
		t.Fatal(err)
	}
	q := s.Snapshot().State.Queue
	if len(q) != 2 || q[0].ID != "d" || q[1].ID != "b" || q[1].Text != "b2" {
		t.Fatalf("queue after saving an overtaken edit: %+v", q)
	}
	os.WriteFile(filepath.Join(h.root, "g2"), nil, 0o600)
	_ = s.Wait(context.Background())
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}
