package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
)

// newSandboxHarness is an engine whose data root, workspace and HOME
// (holding a key) are where a user's are, below a temp directory of
// their own; bash runs script's command.
func newSandboxHarness(t *testing.T, command string, st *engine.SandboxStatus) (*harness, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	root := filepath.Join(home, ".local", "share", "loop")
	work := filepath.Join(home, "src", "project")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{root, work, tmp, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	script := `{"turns":[{"steps":[{"toolCall":{"id":"b1","name":"bash","arguments":{"command":` + strconvQuote(command) + `}}}]},{"steps":[{"text":"done"}]}]}`
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root, opts: engine.Options{Sandbox: st}}
	h.start()
	t.Cleanup(func() { _ = h.e.Shutdown(context.Background(), engine.Abort) })
	ws, err := h.e.AddWorkspace(work, "project")
	if err != nil {
		t.Fatal(err)
	}
	h.ws = ws.ID
	return h, home
}

func strconvQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// approvals records the approval requests and answers each with decide.
type approvals struct {
	mu      sync.Mutex
	reasons []string
}

func (a *approvals) answer(decision string) engine.Approver {
	return approverFunc(func(_ context.Context, req engine.ApprovalRequest) (string, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.reasons = append(a.reasons, req.Reason)
		return decision, nil
	})
}

func (h *harness) runBash(preset string) (string, *engine.Snapshot) {
	h.t.Helper()
	s := h.newSession()
	if _, err := s.SetPermission(preset); err != nil {
		h.t.Fatal(err)
	}
	settled := h.prompt(s, "r1", "go")
	if settled.Outcome != engine.OutcomeCompleted {
		h.t.Fatalf("outcome %q: %+v", settled.Outcome, settled.Error)
	}
	snap := s.Snapshot()
	return toolResultText(h.t, snap.State.Messages, "b1"), snap
}

// Under workspace-write the model's bash command runs in the sandbox: it
// writes the workspace but not $HOME, not the data root, and cannot read
// ~/.ssh; the result says what the sandbox allows and how to allow more.
func TestWorkspaceWriteBashRunsInTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	h, home := newSandboxHarness(t, `echo ok > inside.txt && cat $HOME/.ssh/id_rsa; echo x > $HOME/escape; echo x > $HOME/.local/share/loop/planted; exit 1`, nil)
	text, _ := h.runBash("workspace-write")
	for _, want := range []string{"Permission denied", "workspace-write OS sandbox", "sandbox.writable", "sandbox.network", "full-access"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "PRIVATE KEY") {
		t.Errorf("the key was read:\n%s", text)
	}
	for _, p := range []string{filepath.Join(home, "escape"), filepath.Join(home, ".local", "share", "loop", "planted")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "src", "project", "inside.txt")); err != nil {
		t.Errorf("the workspace was not written: %v", err)
	}
}

// Without a sandbox, workspace-write's bash asks before each command, and
// a rejected command does not run: never silently weaker.
func TestWorkspaceWriteBashAsksWhenThereIsNoSandbox(t *testing.T) {
	h, home := newSandboxHarness(t, `echo x > $HOME/escape`, &engine.SandboxStatus{Reason: "test: no sandbox"})
	if st := h.e.Sandbox(); st.Available || !strings.Contains(st.String(), "test: no sandbox") {
		t.Fatalf("status %+v", st)
	}
	var a approvals
	h.e.SetApprover(a.answer(engine.DecisionRejected))
	h.runBash("workspace-write")
	if len(a.reasons) != 1 || !strings.Contains(a.reasons[0], "sandbox") || !strings.Contains(a.reasons[0], "not available") {
		t.Errorf("approval requests %q", a.reasons)
	}
	if _, err := os.Stat(filepath.Join(home, "escape")); err == nil {
		t.Error("the rejected command ran")
	}
}

// Under read-only the model's bash command runs without approval in
// read-only's sandbox: it writes the temp directory but not the
// workspace, and cannot read ~/.ssh.
func TestReadOnlyBashRunsInTheSandboxWithoutApproval(t *testing.T) {
	sandboxtest.Require(t)
	h, home := newSandboxHarness(t, `echo t > $TMPDIR/ro-temp && echo ok; echo x > inside.txt; cat $HOME/.ssh/id_rsa; exit 1`, nil)
	var a approvals
	h.e.SetApprover(a.answer(engine.DecisionRejected))
	text, _ := h.runBash("read-only")
	if len(a.reasons) != 0 {
		t.Errorf("read-only's bash asked: %q", a.reasons)
	}
	for _, want := range []string{"ok", "Permission denied", "read-only OS sandbox", "full-access"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "PRIVATE KEY") {
		t.Errorf("the key was read:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("TMPDIR"), "ro-temp")); err != nil {
		t.Errorf("the temp directory was not written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "src", "project", "inside.txt")); err == nil {
		t.Error("the workspace was written")
	}
}

// Without a sandbox, read-only's bash is denied (never run with the
// user's full rights, never asked for), saying why.
func TestReadOnlyBashIsDeniedWhenThereIsNoSandbox(t *testing.T) {
	h, home := newSandboxHarness(t, `echo x > $HOME/escape`, &engine.SandboxStatus{Reason: "test: no sandbox"})
	var a approvals
	h.e.SetApprover(a.answer(engine.DecisionAllowedOnce))
	text, _ := h.runBash("read-only")
	if len(a.reasons) != 0 {
		t.Errorf("read-only's bash asked: %q", a.reasons)
	}
	for _, want := range []string{"Permission denied", "read-only", "not available", "workspace-write"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "escape")); err == nil {
		t.Error("the command ran")
	}
}

// Under ask, a command the sandbox stopped with a permission error is
// offered to the user to run again without the sandbox; approved, it runs
// with the user's rights.
func TestAskOffersToRunADeniedCommandAgainWithoutTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	h, home := newSandboxHarness(t, `echo x > $HOME/outside`, nil)
	var a approvals
	h.e.SetApprover(a.answer(engine.DecisionAllowedOnce))
	text, _ := h.runBash("ask")
	if len(a.reasons) != 2 || !strings.Contains(a.reasons[0], "in the workspace-write sandbox") || !strings.Contains(a.reasons[1], "without the sandbox") {
		t.Fatalf("approval requests %q", a.reasons)
	}
	if _, err := os.Stat(filepath.Join(home, "outside")); err != nil {
		t.Errorf("the approved run did not write: %v (result %s)", err, text)
	}
}

// Rejected, the offer leaves the sandboxed failure as the result.
func TestAskKeepsTheSandboxedFailureWhenTheRerunIsRejected(t *testing.T) {
	sandboxtest.Require(t)
	h, home := newSandboxHarness(t, `echo x > $HOME/outside`, nil)
	n := 0
	h.e.SetApprover(approverFunc(func(context.Context, engine.ApprovalRequest) (string, error) {
		n++
		if n == 1 {
			return engine.DecisionAllowedOnce, nil
		}
		return engine.DecisionRejected, nil
	}))
	text, _ := h.runBash("ask")
	if !strings.Contains(text, "Permission denied") || !strings.Contains(text, "not run again without the sandbox") {
		t.Errorf("result:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(home, "outside")); err == nil {
		t.Error("the rejected rerun ran")
	}
}

// Running a command again without the sandbox is asked every time, even
// after the user allowed it "for the session": the model can make any
// command print a permission error, so a standing yes would let every
// later command leave the sandbox unasked.
func TestRunningAgainWithoutTheSandboxIsAskedEveryTime(t *testing.T) {
	sandboxtest.Require(t)
	h, _ := newSandboxHarness(t, `echo x > $HOME/outside`, nil)
	script := `{"turns":[
 {"purpose":"title","steps":[{"text":"a title"}]},
 {"match":"one","steps":[{"toolCall":{"id":"b1","name":"bash","arguments":{"command":"echo x > $HOME/outside"}}}]},{"match":"one","steps":[{"text":"done"}]},
 {"match":"two","steps":[{"toolCall":{"id":"b2","name":"bash","arguments":{"command":"echo y > $HOME/outside2"}}}]},{"match":"two","steps":[{"text":"done"}]}]}`
	if err := os.WriteFile(filepath.Join(h.root, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	h.restart() // the engine reads the script when it starts
	var a approvals
	h.e.SetApprover(a.answer(engine.DecisionAllowedSession))
	s := h.newSession()
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	for r, text := range map[string]string{"r1": "one", "r2": "two"} {
		if settled := h.prompt(s, r, text); settled.Outcome != engine.OutcomeCompleted {
			t.Fatalf("%s: outcome %q: %+v", r, settled.Outcome, settled.Error)
		}
	}
	again := 0
	for _, reason := range a.reasons {
		if strings.Contains(reason, "without the sandbox") {
			again++
		}
	}
	if again != 2 {
		t.Fatalf("asked %d times to run again without the sandbox, want 2: %q", again, a.reasons)
	}
}
