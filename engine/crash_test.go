package engine

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// crashChildEnv makes the test binary a Loop process that prompts one
// session with multi-tool runs until it is killed (TestKill9DuringRunsLosesNoCompletedToolResult).
const crashChildEnv = "LOOP_TEST_CRASH_CHILD"

// crashScript is child k's model: prompts of three turns each, two bash
// calls, two more, then an answer. Each call appends its id to tools.log
// when it runs (one write of one line) and answers "result <id>". Ids are
// the child's own, so a call run twice, by any process, shows in the log.
func crashScript(k, prompts int) string {
	var turns []string
	for p := range prompts {
		for t := range 2 {
			var calls []string
			for c := range 2 {
				id := fmt.Sprintf("k%d-p%d-t%d-c%d", k, p, t, c)
				calls = append(calls, fmt.Sprintf(`{"toolCall":{"id":%q,"name":"bash","arguments":{"command":"echo %s >> ../tools.log; echo result %s"}}}`, id, id, id))
			}
			turns = append(turns, `{"steps":[`+strings.Join(calls, ",")+`]}`)
		}
		turns = append(turns, fmt.Sprintf(`{"steps":[{"text":"prompt %d done"}]}`, p))
	}
	return `{"turns":[` + strings.Join(turns, ",\n") + `]}`
}

// runCrashChild prompts the session (created when LOOP_TEST_SESSION is
// empty) until it is killed, printing its id first.
func runCrashChild() int {
	root := os.Getenv("LOOP_TEST_ROOT")
	k, _ := strconv.Atoi(os.Getenv("LOOP_TEST_KILL"))
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(crashScript(k, 50)), 0o600); err != nil {
		fmt.Println("error", err)
		return 1
	}
	e, err := New(Options{DataRoot: root})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var s *Session
	if id := os.Getenv("LOOP_TEST_SESSION"); id != "" {
		s, err = e.Session(id)
	} else {
		var ws Workspace
		if ws, err = e.AddWorkspace(os.Getenv("LOOP_TEST_CWD"), "crash"); err == nil {
			s, err = e.CreateSession(ws.ID, SessionOptions{Permission: "full-access"})
		}
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("id", s.ID())
	for p := range 50 {
		req := fmt.Sprintf("k%d-p%d", k, p)
		res, err := s.Prompt(PromptInput{RequestID: req, Text: "go"})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		// The answer a client saw: a retry after the kill must get it again.
		fmt.Println("answered", req, res.RunID)
		if err := s.Wait(context.Background()); err != nil {
			fmt.Println("error", err)
			return 1
		}
	}
	return 0
}

// TestKill9DuringRunsLosesNoCompletedToolResult kills a Loop process at
// random instants while it runs multi-tool prompts, opens the session in
// the next process each time, and checks what the journal promises
// (docs/storage.md): every tool that ran (its line in tools.log) has
// exactly one result in the history, in the order they ran: its own
// when it completed, else the interruption's "effect unknown"; every
// result in the history is of a call that ran or says it did not; and
// no tool ran twice.
func TestKill9DuringRunsLosesNoCompletedToolResult(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	root := t.TempDir()
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cwd := filepath.Join(work, "proj")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The tools' processes outlive a killed Loop for a moment (one may
	// even sit between its fork and its exec, holding a copy of the
	// session's locked descriptor). As their subreaper this process waits
	// for them, so the next open neither races them for the lock nor
	// misses a line they append to tools.log.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		testenv.Missing(t, "no child subreaper: %v", errno)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
	id := ""
	var answers [][2]string // request id, run id: answers the children gave
	const kills = 6
	recovered := 0
	for k := range kills {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), crashChildEnv+"=1", "LOOP_TEST_ROOT="+root, "LOOP_TEST_CWD="+cwd,
			"LOOP_TEST_SESSION="+id, "LOOP_TEST_KILL="+strconv.Itoa(k), "GORACE=atexit_sleep_ms=0")
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: the child said nothing", k)
		}
		f := strings.Fields(sc.Text())
		if len(f) != 2 || f[0] != "id" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child: %s", k, sc.Text())
		}
		id = f[1]
		lines := make(chan []string, 1)
		go func() {
			var answered []string
			for sc.Scan() {
				answered = append(answered, sc.Text())
			}
			lines <- answered
		}()
		// Somewhere in its runs: a random instant, not a synchronisation.
		time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		reapOrphans()
		for _, line := range <-lines {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "answered" {
				answers = append(answers, [2]string{f[1], f[2]})
			}
		}

		e, err := New(Options{DataRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.Session(id)
		if err != nil {
			t.Fatalf("kill %d: open: %v", k, err)
		}
		if s.st.ReadOnly() {
			t.Fatalf("kill %d: read-only after the crash: %v", k, s.st.ReadOnlyReason())
		}
		if s.RecoveredOnOpen() != nil {
			recovered++
		}
		checkToolLog(t, k, filepath.Join(work, "tools.log"), s.st.Messages())
		// Every request id a client saw answered, in this process or an
		// earlier one, answers its first run again and runs nothing
		// (queue.json, docs/protocol.md 8.6).
		n := len(s.st.Messages())
		for _, a := range answers {
			res, err := s.Prompt(PromptInput{RequestID: a[0], Text: "go"})
			if err != nil || res.RunID != a[1] {
				t.Fatalf("kill %d: retry of %s after the restart: %+v %v, want run %s", k, a[0], res, err, a[1])
			}
		}
		if got := len(s.st.Messages()); got != n {
			t.Fatalf("kill %d: a retried request id ran again: %d messages, had %d", k, got, n)
		}
		if err := e.Shutdown(context.Background(), Drain); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d left a run to recover, %d answered request ids retried", kills, recovered, len(answers))
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// reapOrphans waits for every child this process has left: the killed
// Loop's tool processes, reparented to it as their subreaper.
func reapOrphans() {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil {
			return // ECHILD: none left
		}
	}
}

// checkToolLog compares the tools that ran with the history's results.
func checkToolLog(t *testing.T, k int, logPath string, history []convo.Message) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var ran []string
	seen := map[string]bool{}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			continue // a write the kill cut
		}
		id := strings.TrimSpace(line)
		if seen[id] {
			t.Fatalf("kill %d: tool %s ran twice", k, id)
		}
		seen[id] = true
		ran = append(ran, id)
	}
	// Walk the history's results and the log together: each tool that
	// ran has exactly one result, in the order they ran, its own or the
	// interruption's; an "effect unknown" result may also be of a call
	// whose process the kill stopped before it wrote its line (it
	// started, it did not get to run).
	p := 0
	for _, m := range history {
		if m.Role != convo.RoleToolResult {
			continue
		}
		id, text := m.ToolCallID, m.Text()
		inOrder := p < len(ran) && ran[p] == id
		switch {
		case !m.IsError:
			if !strings.HasPrefix(text, "result "+id+"\n") {
				t.Fatalf("kill %d: result of %s is %q", k, id, text)
			}
			if !inOrder {
				t.Fatalf("kill %d: the result of %s is out of the order the tools ran in (next ran: %v)", k, id, ran[p:])
			}
			p++
		case text == store.InterruptedStartedText:
			if inOrder {
				p++
			} else if seen[id] {
				t.Fatalf("kill %d: the interrupted result of %s is out of order (next ran: %v)", k, id, ran[p:])
			}
		case text == store.InterruptedUnrunText:
			if seen[id] {
				t.Fatalf("kill %d: %s ran but its result says it did not", k, id)
			}
		default:
			t.Fatalf("kill %d: unexpected error result of %s: %q", k, id, text)
		}
	}
	if p != len(ran) {
		t.Fatalf("kill %d: the history answers %d of the %d tools that ran; missing %v", k, p, len(ran), ran[p:])
	}
}
