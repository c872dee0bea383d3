package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/summary"
)

// runIndexWriterChild churns sessions of one scope (creates, commits,
// archives, pins, deletes) until it has done LOOP_STORE_ROUNDS operations
// or is killed, printing a line after each.
func runIndexWriterChild(root *Root) int {
	ws, cwd := os.Getenv("LOOP_STORE_WS"), os.Getenv("LOOP_STORE_CWD")
	seed, _ := strconv.ParseUint(os.Getenv("LOOP_STORE_SEED"), 10, 64)
	rounds, _ := strconv.Atoi(os.Getenv("LOOP_STORE_ROUNDS"))
	rnd := rand.New(rand.NewPCG(seed, 2))
	var mine []*Session
	n := map[*Session]int{}
	for i := range rounds {
		if len(mine) == 0 || rnd.IntN(4) == 0 {
			s, err := root.Create(ws, cwd)
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			mine = append(mine, s)
		}
		s := mine[rnd.IntN(len(mine))]
		var err error
		switch rnd.IntN(6) {
		case 0, 1, 2:
			n[s]++
			err = s.Commit(history(n[s]), nil, nil)
		case 3:
			err = s.SetArchived(s.Header().ArchivedAt == nil)
		case 4:
			_, err = s.SetPinned(i%2 == 0)
		case 5:
			if len(mine) > 1 {
				err = s.Delete()
				mine = slices_delete(mine, s)
			}
		}
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("done", i)
	}
	return 0
}

// Two processes churn a scope's sessions through the summary index while
// this one walks every page of both lists, and one of them is killed
// with SIGKILL part way (maybe between a loose claim and its header).
// Sessions nobody touches must be on every walk, once, in order; when
// the writers are done, every claim covers its header and the pages are
// exactly the full list.
func TestSummaryIndexAcrossProcessesWithAKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	base, _ := newTestRoot(t)
	ws, err := base.AddWorkspace(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	// The untouched sessions, older than anything the writers do.
	var stable []string
	for range 5 {
		s, err := base.Create(ws.ID, ws.Cwd)
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s, history(1), nil, nil)
		stable = append(stable, s.ID())
		s.Close()
	}
	if _, err := base.ListPage(ws.ID, PageOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd      *os.Process
		done     chan int
		progress *atomic.Int64
	}
	var kids []child
	for i, rounds := range []int{120, 400} {
		cmd := childCmd(t, "indexwriter", "LOOP_STORE_ROOT="+base.Dir(), "LOOP_STORE_WS="+ws.ID, "LOOP_STORE_CWD="+ws.Cwd,
			"LOOP_STORE_SEED="+strconv.Itoa(i+7), "LOOP_STORE_ROUNDS="+strconv.Itoa(rounds))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := child{cmd: cmd.Process, done: make(chan int, 1), progress: new(atomic.Int64)}
		t.Cleanup(func() { cmd.Process.Kill() })
		go func() {
			sc := bufio.NewScanner(out)
			lines := 0
			for sc.Scan() {
				if len(sc.Text()) > 5 && sc.Text()[:5] == "error" {
					t.Errorf("writer %d: %s", i, sc.Text())
				}
				lines++
				c.progress.Store(int64(lines))
			}
			cmd.Wait()
			c.done <- lines
		}()
		kids = append(kids, c)
	}
	r, _ := OpenRoot(base.Dir())
	sd, _ := r.scopeDir(ws.ID)
	walks, killed := 0, false
	for {
		select {
		case <-kids[0].done:
			kids[0].done = nil
		default:
		}
		finished := kids[0].done == nil
		select {
		case lines := <-kids[1].done:
			t.Logf("the second writer stopped after %d operations of 400 (killed: %v)", lines, killed)
			kids[1].done = nil
		default:
		}
		if kids[1].done == nil && finished {
			break
		}
		if !killed && kids[1].progress.Load() >= 150 && kids[1].done != nil {
			kids[1].cmd.Signal(syscall.SIGKILL)
			killed = true
		}
		walks++
		if walks%7 == 0 {
			// The next list rebuilds while the writers append.
			os.Remove(filepath.Join(sd, summary.FileName))
		}
		for _, archived := range []bool{false, true} {
			var after *Position
			seen := map[string]int{}
			var order []string
			for page := 0; ; page++ {
				got, err := r.ListPage(ws.ID, PageOptions{Archived: archived, After: after, Limit: 3})
				if err != nil {
					t.Fatalf("walk %d page %d: %v", walks, page, err)
				}
				for _, s := range got {
					seen[s.ID]++
					order = append(order, s.ID)
				}
				if len(got) < 3 {
					break
				}
				last := got[len(got)-1]
				after = &Position{UpdatedAt: last.UpdatedAt, ID: last.ID}
			}
			if archived {
				continue
			}
			prev := -1
			// Newest first: the last one made comes first.
			for i := len(stable) - 1; i >= 0; i-- {
				id := stable[i]
				if seen[id] != 1 {
					t.Fatalf("walk %d: untouched session %s seen %d times", walks, id, seen[id])
				}
				at := slices_index(order, id)
				if at < prev {
					t.Fatalf("walk %d: untouched sessions out of order", walks)
				}
				prev = at
			}
		}
	}
	t.Logf("%d walks", walks)
	checkClaimsCoverHeaders(t, base, ws.ID)
	checkPagesMatchList(t, base, ws.ID, 1, 3, 50)
}

func slices_index(ss []string, s string) int {
	for i := range ss {
		if ss[i] == s {
			return i
		}
	}
	return -1
}
