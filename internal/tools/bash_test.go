//go:build unix

package tools

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBash(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	var mu sync.Mutex
	var streamed strings.Builder
	tool, _ := Lookup(NameBash)
	r := tool.Run(context.Background(), env, js(t, map[string]any{"command": "echo out; echo err >&2; pwd"}), func(s string) {
		mu.Lock()
		streamed.WriteString(s)
		mu.Unlock()
	})
	got := wantOK(t, r)
	want := "out\nerr\n" + f.ws + "\n\n[exit code 0]"
	if got != want {
		t.Fatalf("bash: %q, want %q", got, want)
	}
	if streamed.String() != "out\nerr\n"+f.ws+"\n" {
		t.Fatalf("streamed %q", streamed.String())
	}
	if r.Details["exitCode"] != 0 || r.Details["truncated"] != false {
		t.Fatalf("details %v", r.Details)
	}
	// stdin is empty, so cat returns at once.
	if got := wantOK(t, run(t, env, NameBash, map[string]any{"command": "cat"})); got != "(no output)\n\n[exit code 0]" {
		t.Fatalf("cat: %q", got)
	}
	// BashEnv reaches the command.
	env.BashEnv = []string{"LOOP_TEST_VAR=42"}
	if got := wantOK(t, run(t, env, NameBash, map[string]any{"command": "echo $LOOP_TEST_VAR"})); !strings.HasPrefix(got, "42\n") {
		t.Fatalf("env: %q", got)
	}
}

func TestBashFailures(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	r := run(t, env, NameBash, map[string]any{"command": "echo partial; exit 3"})
	wantErr(t, r, "partial", "[exit code 3]")
	if r.Details["exitCode"] != 3 {
		t.Fatalf("details %v", r.Details)
	}
	r = run(t, env, NameBash, map[string]any{"command": "kill -TERM $$"})
	wantErr(t, r, "killed by signal SIGTERM")
	if r.Details["exitCode"] != -1 || r.Details["signal"] != "SIGTERM" {
		t.Fatalf("details %v", r.Details)
	}
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "  "}), "command is empty")
	wantErr(t, run(t, env, NameBash, map[string]any{}), `missing required field "command"`)
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "true", "timeout": 0}), "timeout must be more than 0")
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "true", "timeout": 601}), "at most 600 seconds")
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "true", "timeout": "5"}), `field "timeout" must be a number`)
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "true", "cwd": "/"}), `unknown field "cwd"`)
	wantErr(t, run(t, Env{Cwd: f.ws + "/nope"}, NameBash, map[string]any{"command": "true"}), "not an accessible directory")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tool, _ := Lookup(NameBash)
	wantErr(t, tool.Run(ctx, env, js(t, map[string]any{"command": "touch started"}), nil), "not started")
	if _, err := os.Stat(f.ws + "/started"); err == nil {
		t.Fatal("a cancelled call ran")
	}
}

func TestBashOutputCap(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.BashOutputCap = 1000
	env.BashProgressCap = 2000
	var streamed int
	tool, _ := Lookup(NameBash)
	// 20000 numbered lines: the first and the last survive, the middle goes.
	r := tool.Run(context.Background(), env, js(t, map[string]any{"command": "seq 1 20000"}), func(s string) { streamed += len(s) })
	got := wantOK(t, r)
	if !strings.HasPrefix(got, "1\n2\n3\n") || !strings.Contains(got, "19999\n20000\n\n[exit code 0]") {
		t.Fatalf("head/tail: %q ... %q", got[:20], got[len(got)-40:])
	}
	total := len(lines(1, 20000))
	if !strings.Contains(got, "bytes of output omitted") || !strings.Contains(got, strconv.Itoa(total)+" bytes in all") {
		t.Fatalf("no cut note: %q", got)
	}
	if len(got) > 1300 || r.Details["truncated"] != true || r.Details["outputBytes"] != total {
		t.Fatalf("cap: %d bytes, details %v", len(got), r.Details)
	}
	if streamed > 2000+32<<10+200 || streamed < 2000 {
		t.Fatalf("streamed %d bytes", streamed)
	}
}

func TestCapBufferAndUTF8(t *testing.T) {
	c := newCapBuffer(10)
	for _, s := range []string{"héllo", "-middle-", "wörld!"} {
		c.Write([]byte(s))
	}
	got := c.String()
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "héll") || !strings.HasSuffix(got, "\n\nrld!") || !c.truncated() {
		t.Fatalf("cap buffer: %q", got)
	}
	small := newCapBuffer(100)
	small.Write([]byte("abc"))
	if small.String() != "abc" || small.truncated() {
		t.Fatal("small buffer")
	}
	var sp utf8Splitter
	b := []byte("aé€")
	var out string
	for i := range b {
		out += sp.next(b[i : i+1])
	}
	out += sp.flush()
	if out != "aé€" {
		t.Fatalf("splitter: %q", out)
	}
}

var childRE = regexp.MustCompile(`child=(\d+)`)

// procGone reports whether pid no longer runs: no /proc entry, or a zombie
// that only waits for its new parent to reap it.
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitGone waits for the killed children to disappear. SIGKILL has been
// sent before Run returns; the loop only covers the kernel's teardown, and
// its bound is far above it, so it does not time anything.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to check processes with")
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for !procGone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("child %d is still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func childPids(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, m := range childRE.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("want 2 child pids in %q", out)
	}
	return pids
}

// Cancelling the context kills the shell and the children it started. The
// cancel comes from the progress callback once the children exist, so
// nothing depends on timing. SIGTERM suffices here, so Run returns without
// waiting out the grace: with a grace of an hour, a Run that waited for it
// is caught by the watchdog, which is far above anything SIGTERM needs and
// far below the grace, whatever the machine's load.
func TestBashCancelKillsGroupWithoutWaitingOutTheGrace(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.KillGrace = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seen strings.Builder
	tool, _ := Lookup(NameBash)
	cmd := "sleep 100 & echo child=$!; sleep 100 & echo child=$!; echo ready; wait"
	done := make(chan Result, 1)
	go func() {
		done <- tool.Run(ctx, env, js(t, map[string]any{"command": cmd}), func(s string) {
			mu.Lock()
			defer mu.Unlock()
			seen.WriteString(s)
			if strings.Contains(seen.String(), "ready") {
				cancel()
			}
		})
	}()
	var r Result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		// Waiting out the grace: end the children so that Run returns.
		mu.Lock()
		pids := childPids(t, seen.String())
		mu.Unlock()
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		<-done
		t.Fatal("Run waited for the grace: SIGTERM did not end the group")
	}
	wantErr(t, r, "aborted")
	if r.Details["aborted"] != true {
		t.Fatalf("details %v", r.Details)
	}
	waitGone(t, childPids(t, r.Text()))
}

// A timeout kills the group too, with SIGKILL for children that ignore
// SIGTERM (trap ” TERM is inherited).
func TestBashTimeoutKillsGroup(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.KillGrace = 100 * time.Millisecond
	cmd := "trap '' TERM; sleep 100 & echo child=$!; sleep 100 & echo child=$!; wait"
	r := run(t, env, NameBash, map[string]any{"command": cmd, "timeout": 1})
	wantErr(t, r, "timed out after 1 s")
	if r.Details["timedOut"] != true || r.Details["signal"] != "SIGKILL" {
		t.Fatalf("details %v", r.Details)
	}
	waitGone(t, childPids(t, r.Text()))
}

// A background job that keeps the output pipe open does not hold the call:
// output is collected until the shell exits and a short drain after it.
func TestBashBackgroundJobDoesNotBlock(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	r := run(t, env, NameBash, map[string]any{"command": "(sleep 30; echo late) & echo child=$!; echo pgid=$$"})
	got := wantOK(t, r)
	m := regexp.MustCompile(`pgid=(\d+)`).FindStringSubmatch(got)
	if m == nil || strings.Contains(got, "late") {
		t.Fatalf("background: %q", got)
	}
	pgid, _ := strconv.Atoi(m[1])
	syscall.Kill(-pgid, syscall.SIGKILL) // clean up the job the command left running
}

// The command has no controlling terminal, so /dev/tty prompts fail fast.
func TestBashNoTerminal(t *testing.T) {
	f := newFixture(t)
	r := run(t, f.env(PresetWorkspaceWrite), NameBash, map[string]any{"command": "echo pid=$$ pgid=$(ps -o pgid= -p $$ | tr -d ' ') sid=$(ps -o sid= -p $$ | tr -d ' '); exec 3</dev/tty"})
	got := wantErr(t, r)
	m := regexp.MustCompile(`pid=(\d+) pgid=(\d+) sid=(\d+)`).FindStringSubmatch(got)
	if m == nil {
		t.Skipf("ps unavailable: %q", got)
	}
	if m[1] != m[2] || m[1] != m[3] {
		t.Fatalf("shell should lead its own group and session: %q", got)
	}
}
