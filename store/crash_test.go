package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv selects a child role when the test binary re-executes itself.
const childEnv = "LOOP_STORE_TEST_CHILD"

// runChild is the body of a child process: "commitloop" commits prompt
// after prompt until killed, "lockprobe" reports what a second process can
// do with a session, "readonlymount" what it can do on a read-only mount
// (readonly_test.go).
func runChild(role string) int {
	root, err := OpenRoot(os.Getenv("LOOP_STORE_ROOT"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	id := os.Getenv("LOOP_STORE_SESSION")
	switch role {
	case "commitloop":
		var s *Session
		if id == "" {
			s, err = root.Create("", os.Getenv("LOOP_STORE_CWD"))
		} else {
			s, err = root.Open("", id)
		}
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("id", s.ID())
		for range 100000 {
			n := len(s.Messages()) / 4
			// Each round finishes the previous round's timing (a record
			// that replaces one) and starts its own (one that appends).
			var timings []TimingAt
			if n > 0 {
				timings = append(timings, TimingAt{Index: n - 1, Timing: crashTiming(n-1, true)})
			}
			timings = append(timings, TimingAt{Index: n, Timing: crashTiming(n, false)})
			err := s.Commit(history(n+1), []RuntimeRecord{rtRecord("round", n)}, func(h *Header) {
				h.Unread = true
			}, timings...)
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			// Printed only after Commit returned: this many rounds are durable.
			fmt.Println("committed", n+1)
		}
		return 0
	case "rewindloop":
		// Grows the session to three rounds and rewinds it to its first,
		// again and again until killed (fork_test.go).
		s, err := root.Open("", id)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		for range 100000 {
			for n := len(s.Messages()) / 4; n < 3; n++ {
				if err := s.Commit(history(n+1), nil, nil); err != nil {
					fmt.Println("error", err)
					return 1
				}
			}
			f, err := s.Rewind(4)
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println("rewound", f)
		}
		return 0
	case "lockprobe":
		s, err := root.Open("", id)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		out := map[string]any{"readOnly": s.ReadOnly(), "messages": len(s.Messages())}
		n := len(s.Messages()) / 4
		describe := func(err error) string {
			switch {
			case err == nil:
				return "ok"
			case errors.Is(err, ErrSessionLocked):
				return "locked"
			}
			return err.Error()
		}
		_, pinErr := s.SetPinned(true)
		out["pin"] = describe(pinErr)
		out["commit"] = describe(s.Commit(history(n+1), nil, nil))
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		return 0
	case "readonlymount":
		return runReadOnlyMountChild(root, id)
	case "indexwriter":
		return runIndexWriterChild(root)
	case "sweepstall":
		return runSweepStallChild(root)
	case "queueloop":
		return runQueueLoopChild(root, id)
	}
	return 2
}

func childCmd(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role, "GORACE=atexit_sleep_ms=0"}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// A second process meets session_locked for writes and can still read.
func TestSecondProcessIsLockedOut(t *testing.T) {
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(2), nil, nil)
	probe := func() map[string]any {
		t.Helper()
		cmd := childCmd(t, "lockprobe", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_SESSION="+s.ID())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v: %s", err, out)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("child output %q: %v", out, err)
		}
		return res
	}
	res := probe()
	if res["readOnly"] != true || res["messages"] != 8.0 || res["commit"] != "locked" || res["pin"] != "locked" {
		t.Fatalf("while locked: %v", res)
	}
	// The holder is unaffected.
	mustCommit(t, s, history(3), nil, nil)
	s.Close()
	res = probe()
	if res["readOnly"] != false || res["messages"] != 12.0 || res["commit"] != "ok" || res["pin"] != "ok" {
		t.Fatalf("after the writer closed: %v", res)
	}
	o, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(4))
	if o.Header().PinnedAt == nil {
		t.Fatal("child's pin lost")
	}
}

// kill -9 at random points of a commit loop: every reopen finds a whole
// committed prefix, at least as long as the child reported durable, and
// the next process continues from it.
func TestKillDuringCommits(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	id := ""
	const kills = 8
	tails, ahead := 0, 0
	defer func() {
		t.Logf("%d kills: %d left an unpublished tail, %d after an unreported commit", kills, tails, ahead)
	}()
	for k := range kills {
		cmd := childCmd(t, "commitloop", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_SESSION="+id, "LOOP_STORE_CWD="+cwd)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		reported := -1
		target := 1 + rng.IntN(12)
		seen := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "id" {
				id = f[1]
				continue
			}
			if len(f) < 2 || f[0] != "committed" {
				t.Fatalf("child: %s", sc.Text())
			}
			reported, _ = strconv.Atoi(f[1])
			if seen++; seen == target {
				break
			}
		}
		// Let the child run into the middle of a later commit, then kill it.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		if reported < 0 {
			t.Fatalf("kill %d: the child committed nothing", k)
		}
		if fi, err := os.Stat(r.Dir() + "/sessions/global/" + id + "/" + messagesFile); err == nil {
			if h, err := r.ReadHeader("", id); err == nil && fi.Size() > h.MessagesBytes {
				tails++
			}
		}
		s, err := r.Open("", id)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		msgs := s.Messages()
		rounds := len(msgs) / 4
		if len(msgs)%4 != 0 || rounds < reported {
			t.Fatalf("kill %d: %d messages after %d reported rounds", k, len(msgs), reported)
		}
		if rounds > reported {
			ahead++
		}
		wantMessages(t, msgs, history(rounds))
		h := s.Header()
		if len(s.Runtime()) != rounds || len(s.Timings()) != rounds || h.UserMessageCount != rounds {
			t.Fatalf("kill %d: %d rounds but %d runtime records, %d timings", k, rounds, len(s.Runtime()), len(s.Timings()))
		}
		// Each timing is in the state of the last committed round: the
		// replacements of a commit land with its messages or not at all.
		for i, tm := range s.Timings() {
			if want := crashTiming(i, i < rounds-1); tm != want {
				t.Fatalf("kill %d: timing %d of %d rounds is %+v, want %+v", k, i, rounds, tm, want)
			}
		}
		if fi, err := os.Stat(filepath.Join(s.Dir(), headerFile)); err != nil || fi.Size() > 4096 {
			t.Fatalf("kill %d: header.json %v, %v", k, fi.Size(), err)
		}
		s.Close()
	}
}

// crashTiming is the timing of round n of the commit loop, started or
// finished.
func crashTiming(n int, finished bool) PromptTiming {
	t := PromptTiming{ID: fmt.Sprintf("round-%d", n), UserMessageIndex: n, MessageStartIndex: Some(4 * n), StartedAt: int64(n)}
	if finished {
		t.MessageEndIndex, t.FinishedAt = Some(4*n+4), Some(int64(n+1))
	}
	return t
}
