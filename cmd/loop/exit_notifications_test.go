package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestExitAndSIGTERMWriteTheSettlementOfEveryStoppedRun: with runs in
// flight, the exit notification and SIGTERM stop them, and every run's
// agent_settled, and the session/state and sessions/changed that follow it,
// are written before the process exits (docs/protocol.md 2.6), by the real
// binary, with several sessions and large snapshots.
//
// The loss it was written for was a race (Wait and Abort returned while a
// run that had let go was still publishing its end), which this test once
// caught by starting the binary 30 times. That race is guarded at its root
// by the engine's deterministic TestWaitAndAbortCoverARunStillPublishingItsSettlement;
// with that fix reverted, this test no longer catches it in 60 starts (the
// runs it stops are still running when the abort comes, and Abort waits for
// them), so repeating it buys nothing measurable: it starts the binary
// three times per way out (once under -race), which keeps what it asserts.
// LOOP_EXIT_RUNS sets the starts per way out, for a deeper search.
func TestExitAndSIGTERMWriteTheSettlementOfEveryStoppedRun(t *testing.T) {
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatalf("the loop command TestMain registers is not on PATH: %v", err)
	}
	runs := 3
	if raceEnabled {
		runs = 1 // each start is several times slower
	}
	if n, err := strconv.Atoi(os.Getenv("LOOP_EXIT_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for _, how := range []string{"exit", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			for i := range runs {
				if lost := stopRunsInFlight(t, bin, how); lost != "" {
					t.Fatalf("start %d of %d: %s", i+1, runs, lost)
				}
			}
		})
	}
}

// stopRunsInFlight starts loop, leaves a few runs streaming, stops the
// process with how, reads stdout to its end and says what is missing.
func stopRunsInFlight(t *testing.T, bin, how string) string {
	t.Helper()
	const sessions = 8
	data := t.TempDir()
	turns := strings.TrimSuffix(strings.Repeat(`{"match":"hang","steps":[{"text":"partial"},{"hang":true}]},`, sessions), ",")
	// A context window far above the prompts: no request needs the exact
	// token count, so no start spends its time tokenizing them.
	writeFile(t, filepath.Join(data, "config.json"), `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}}}`)
	writeFile(t, filepath.Join(data, "script.json"), `{"turns":[`+turns+`]}`)

	cmd := exec.Command(bin, "--data-dir", data, "--log-level", "error")
	cmd.Env = append(os.Environ(), "HOME="+data)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	c := &lineClient{t: t, in: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	// Large prompts make every session/state snapshot slow to encode, which
	// is what kept a run's end in flight while the process shut down.
	pad := strings.Repeat("lorem ipsum ", 200000/12)
	var ids []string
	for range sessions {
		var res struct {
			SessionID string `json:"sessionId"`
		}
		c.call("session/new", `{"workspaceId":null}`, &res)
		ids = append(ids, res.SessionID)
	}
	for i, id := range ids {
		c.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"r%d","text":"hang %s"}`, id, i, pad), nil)
	}
	// A prompt's reply may come after its first deltas: count them all.
	isDelta := func(m lineMessage) bool {
		return m.Method == "session/message" && strings.Contains(string(m.Params), `"event":"delta"`)
	}
	deltas := 0
	for _, m := range c.seen {
		if isDelta(m) {
			deltas++
		}
	}
	for deltas < sessions {
		if isDelta(c.read()) {
			deltas++
		}
	}

	if how == "exit" {
		c.send(`{"jsonrpc":"2.0","method":"exit"}`)
	} else if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for c.next() {
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("loop after %s: %v\n%s", how, err, stderr.String())
	}

	// Per session, in order: agent_settled (cancelled), then its state,
	// then its list change. Each message is decoded once, not once per
	// session: the snapshots are large.
	step := make(map[string]int, sessions)
	for _, m := range c.seen {
		var p struct {
			SessionID string `json:"sessionId"`
			RequestID string `json:"requestId"`
			Outcome   string `json:"outcome"`
		}
		_ = json.Unmarshal(m.Params, &p)
		i := slices.Index(ids, p.SessionID)
		if i < 0 {
			continue
		}
		switch s := step[p.SessionID]; {
		case s == 0 && m.Method == "session/agent_settled" && p.RequestID == fmt.Sprintf("r%d", i) && p.Outcome == "cancelled":
			step[p.SessionID] = 1
		case s == 1 && m.Method == "session/state":
			step[p.SessionID] = 2
		case s == 2 && m.Method == "sessions/changed":
			step[p.SessionID] = 3
		}
	}
	for i, id := range ids {
		if s := step[id]; s < 3 {
			missing := []string{"session/agent_settled", "session/state", "sessions/changed"}[s:]
			return fmt.Sprintf("after %s, session %d of %d never got %s", how, i+1, sessions, strings.Join(missing, ", then "))
		}
	}
	return ""
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lineClient speaks NDJSON to the binary and keeps every message it read.
type lineClient struct {
	t    *testing.T
	in   io.Writer
	out  *bufio.Reader
	id   int
	seen []lineMessage
	last lineMessage
}

type lineMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (c *lineClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write to loop: %v", err)
	}
}

// next reads one message; false at the end of output.
func (c *lineClient) next() bool {
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return false
	}
	var m lineMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("loop wrote a line that is not JSON: %q", line)
	}
	c.seen = append(c.seen, m)
	c.last = m
	return true
}

func (c *lineClient) read() lineMessage {
	c.t.Helper()
	if !c.next() {
		c.t.Fatal("loop's output ended early")
	}
	return c.last
}

// call sends a request and reads up to its reply, which must be a result.
func (c *lineClient) call(method, params string, result any) {
	c.t.Helper()
	c.id++
	want := strconv.Itoa(c.id)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, want, method, params))
	for {
		m := c.read()
		if m.Method != "" || string(m.ID) != want {
			continue
		}
		if m.Error != nil {
			c.t.Fatalf("%s: %s", method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				c.t.Fatalf("%s result: %v", method, err)
			}
		}
		return
	}
}
