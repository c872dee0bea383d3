package acp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
)

// acpxLine is the command the model runs through acpx: spaces, a pipe,
// both kinds of quotes and arithmetic.
const acpxLine = `echo 'hello world' | tr a-z A-Z; printf '%s\n' "two words" "it's $((40+2))"`

// TestAcpxOneProcessPerCommand drives the built loop binary with acpx
// (testdata/interop/node_modules/acpx, a headless ACP client that runs
// every command as its own process): `sessions new`, `set-mode ask` and
// `prompt` run in three processes over one data root. The session the
// first made is the one the others resume, with the mode the second set:
// the prompt's bash asks for permission, and acpx, approving, spawns
// terminal/create's command and args without a shell, so the whole line
// runs. It needs node and `npm ci` in testdata/interop; without them it
// is skipped, or fails under CI (nodeWithPackages).
func TestAcpxOneProcessPerCommand(t *testing.T) {
	interop, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	node := nodeWithPackages(t, interop, "acpx")
	cli := filepath.Join(interop, "node_modules", "acpx", "dist", "cli.js")
	bin := buildLoop(t)

	root := t.TempDir()
	script, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"match": "run it", "steps": []any{map[string]any{"toolCall": map[string]any{"id": "b1", "name": "bash", "arguments": map[string]any{"command": acpxLine}}}}},
		map[string]any{"match": "run it", "steps": []any{map[string]any{"text": "Ran it."}}},
	}})
	write(t, filepath.Join(root, "script.json"), string(script))
	write(t, filepath.Join(root, "config.json"), `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`)
	work := t.TempDir()
	if canon, err := filepath.EvalSymlinks(work); err == nil {
		work = canon
	}
	home := t.TempDir()
	t.Cleanup(func() { stopAcpx(t, home) })

	agent := "'" + bin + "' --acp --data-dir '" + root + "'"
	acpx := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli, "--agent", agent, "--cwd", work, "--format", "json"}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("acpx %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	type action struct {
		Action        string `json:"action"`
		Resumed       bool   `json:"resumed"`
		AcpxSessionID string `json:"acpxSessionId"`
	}
	lastAction := func(out []byte) action {
		t.Helper()
		var a action
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			_ = json.Unmarshal(line, &a)
		}
		return a
	}

	created := lastAction(acpx("sessions", "new"))
	sid := created.AcpxSessionID
	if created.Action != "session_ensured" || sid == "" {
		t.Fatalf("sessions new: %+v", created)
	}
	if set := lastAction(acpx("set-mode", "ask")); set.Action != "mode_set" || !set.Resumed || set.AcpxSessionID != sid {
		t.Fatalf("set-mode in the next process did not resume %s: %+v", sid, set)
	}
	frames := acpx("--approve-all", "prompt", "run it")
	// The prompt ran in a queue owner, a background acpx process that keeps
	// the agent for later prompts; closing the session ends both.
	if closed := lastAction(acpx("sessions", "close")); closed.Action != "session_closed" || closed.AcpxSessionID != sid {
		t.Fatalf("sessions close: %+v", closed)
	}

	var create map[string]any
	var methods []string
	stop := ""
	for _, line := range bytes.Split(frames, []byte("\n")) {
		var f map[string]any
		if json.Unmarshal(line, &f) != nil {
			continue
		}
		m, _ := f["method"].(string)
		methods = append(methods, m)
		if m == "terminal/create" {
			create, _ = f["params"].(map[string]any)
		}
		if r, ok := f["result"].(map[string]any); ok && r["stopReason"] != nil {
			stop, _ = r["stopReason"].(string)
		}
	}
	joined := strings.Join(methods, " ")
	if !strings.Contains(joined, "session/resume") || strings.Contains(joined, "session/new") || strings.Contains(joined, "session/set_mode") {
		t.Fatalf("the prompt did not resume the session as it was: %s", joined)
	}
	if !strings.Contains(joined, "session/request_permission") || stop != "end_turn" {
		t.Fatalf("the ask mode did not hold (stopReason %q): %s", stop, joined)
	}
	// The command runs in the editor's terminal inside the OS sandbox of
	// ask mode, through the loop binary's sandbox helper, when there is a
	// sandbox here (docs/acp.md), else as it is.
	args, _ := create["args"].([]any)
	wrapped := len(args) == 2 && args[0] == "-c" && strings.Contains(fmt.Sprint(args[1]), "'__loop-sandbox' ") &&
		strings.Contains(fmt.Sprint(args[1]), "'--' '"+tools.Shell()+"' '-c' ")
	if create["command"] != tools.Shell() || (dump(create["args"]) != dump([]any{"-c", acpxLine}) && !wrapped) {
		t.Fatalf("terminal/create: %s", dump(create))
	}

	// What the three processes left in the store: the one session, its
	// mode, and the command's whole output.
	waitUnlocked(t, root, sid)
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	wss, err := e.Workspaces()
	if err != nil || len(wss) != 1 {
		t.Fatalf("workspaces: %+v %v", wss, err)
	}
	list, err := e.List(wss[0].ID, false)
	if err != nil || len(list) != 1 || list[0].ID != sid {
		t.Fatalf("sessions: %+v %v (want only %s)", list, err, sid)
	}
	sess, err := e.Session(sid)
	if err != nil {
		t.Fatal(err)
	}
	snap := sess.Snapshot()
	if snap.State.PermissionPreset != "ask" {
		t.Fatalf("permission %q", snap.State.PermissionPreset)
	}
	if got := toolResult(t, snap.State.Messages, "b1"); got != "HELLO WORLD\ntwo words\nit's 42\n\n[exit code 0]" {
		t.Fatalf("bash result %q", got)
	}
}

// buildLoop builds cmd/loop with the go command running the tests.
func buildLoop(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "loop")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", out, "./cmd/loop")
	cmd.Dir = filepath.Join("..", "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building loop: %v\n%s", err, b)
	}
	return out
}

// waitUnlocked waits until no process holds the session's lock: the
// loop process acpx's queue owner ran has ended.
func waitUnlocked(t *testing.T, root, sid string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, "sessions", "*", sid))
	if len(dirs) != 1 {
		t.Fatalf("session directory of %s: %v", sid, dirs)
	}
	waitFor(t, "the loop process to release the session", func() bool {
		d, err := os.Open(dirs[0])
		if err != nil {
			return false
		}
		defer d.Close()
		return syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	})
}

// stopAcpx ends the queue owners acpx left running for this test's HOME
// (a failed test may leave one; their pids are in its lease files), waits
// for them, and removes the directory acpx keeps their sockets in,
// /tmp/acpx-<first 10 hex digits of sha256(HOME)>.
func stopAcpx(t *testing.T, home string) {
	locks, _ := filepath.Glob(filepath.Join(home, ".acpx", "queues", "*.lock"))
	for _, l := range locks {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		var lease struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &lease) != nil || lease.PID <= 0 {
			continue
		}
		// A lease can outlive its owner: signal the pid only while it is
		// still an acpx queue owner.
		owner := func() bool {
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(lease.PID), "cmdline"))
			return err == nil && bytes.Contains(cmdline, []byte("__queue-owner"))
		}
		if !owner() {
			continue
		}
		if p, err := os.FindProcess(lease.PID); err == nil {
			_ = p.Signal(syscall.SIGTERM)
		}
		for deadline := time.Now().Add(10 * time.Second); owner() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if owner() {
			t.Logf("acpx queue owner %d still running", lease.PID)
		}
	}
	sum := sha256.Sum256([]byte(home))
	_ = os.RemoveAll(filepath.Join("/tmp", "acpx-"+hex.EncodeToString(sum[:])[:10]))
}
