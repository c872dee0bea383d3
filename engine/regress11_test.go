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

func TestRegressionChaos(t *testing.T) {
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
	s := h.newSession()
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			n := 0
			for time.Now().Before(deadline) {
				n++
				id := fmt.Sprintf("g%d-%d", g, n)
				switch rng.Intn(12) {
				case 0, 1, 2:
					s.Prompt(engine.PromptInput{RequestID: id, Text: "hi " + id})
				case 3:
					s.Abort(context.Background())
				case 4:
					s.Compact(context.Background())
				case 5:
					s.GenerateTitle(context.Background())
				case 6:
					s.SetPinned(rng.Intn(2) == 0)
				case 7:
					s.Resume()
				case 8:
					q := s.Snapshot().State.Queue
					if len(q) > 0 {
						acts := []string{"edit", "move", "delete", "steer", "begin-edit", "cancel-edit"}
						txt := "e"
						s.Queue(engine.QueueAction{ID: q[rng.Intn(len(q))].ID, Action: acts[rng.Intn(len(acts))], Text: &txt})
					}
				case 9:
					s.MarkRead(s.Snapshot().State.MessageCount)
				case 10:
					s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil)
				case 11:
					s.SetPermission("read-only")
				}
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	snap := s.Snapshot()
	t.Logf("final op=%s queue=%d msgs=%d pending=%v", snap.Operation, len(snap.State.Queue), len(snap.State.Messages), snap.State.HasPendingSave)
}
