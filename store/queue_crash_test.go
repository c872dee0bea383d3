package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// crashQueue is the state the queueloop child saves as its n-th: n request
// ids, the last 256 of them, and the latest three as queued inputs, one
// of them long enough to be written in several pieces.
func crashQueue(n int) QueueState {
	var q QueueState
	for i := max(0, n-MaxAcceptedRequests); i < n; i++ {
		q.Requests = append(q.Requests, AcceptedRequest{ID: fmt.Sprintf("req-%d", i), Digest: fmt.Sprintf("%064x", i), RunID: fmt.Sprintf("run-%d", i), Queued: true})
	}
	for i := max(0, n-3); i < n; i++ {
		q.Items = append(q.Items, QueuedInput{ID: fmt.Sprintf("req-%d", i), RunID: fmt.Sprintf("run-%d", i), Text: strings.Repeat(fmt.Sprintf("input %d\n", i), 1+i%3*20000), QueuedAt: int64(i)})
	}
	return q
}

// runQueueLoopChild saves crashQueue(n) for n = the saved state's + 1,
// +2, ... until killed, printing each n once SaveQueue returned.
func runQueueLoopChild(root *Root, id string) int {
	s, err := root.Open("", id)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	n := savedState(s.StoredQueue())
	for {
		n++
		q := crashQueue(n)
		if err := s.SaveQueue(&q); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("saved", n)
	}
}

// kill -9 at random instants of a loop of queue.json writes: the next
// process always reads one whole state, never a torn or mixed one, at
// least as new as the last one the child reported saved, and writes on
// from it.
func TestKillDuringQueueWritesLeavesAWholeState(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	s.Close()
	for k := range 6 {
		cmd := childCmd(t, "queueloop", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_SESSION="+id)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		reported, target, seen := 0, 1+rng.IntN(6), 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[0] != "saved" {
				t.Fatalf("child: %s", sc.Text())
			}
			reported, _ = strconv.Atoi(f[1])
			if seen++; seen == target {
				break
			}
		}
		// The kill lands at a random instant of a later write (the random
		// wait is what makes the instant random, not a synchronisation).
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()

		o, err := r.Open("", id)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		if o.ReadOnly() {
			t.Fatalf("kill %d: the state was refused: %v", k, o.ReadOnlyReason())
		}
		got := o.StoredQueue()
		n := savedState(got)
		if n < reported {
			t.Fatalf("kill %d: the file holds state %d, the child had reported %d saved", k, n, reported)
		}
		if want := crashQueue(n); len(got.Items) != len(want.Items) || len(got.Requests) != len(want.Requests) || (n > 0 && got.Items[len(got.Items)-1].Text != want.Items[len(want.Items)-1].Text) {
			t.Fatalf("kill %d: state %d is not the one saved", k, n)
		}
		o.Close()
	}
}

// savedState is the n of a crashQueue(n) read back: one past its last
// request id.
func savedState(q QueueState) int {
	if len(q.Requests) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(q.Requests[len(q.Requests)-1].ID, "req-"))
	return n + 1
}
