//go:build linux

package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runUntilPid runs command, cancelling it (or letting it time out when
// timeout is set) once it has written a pid to the file "pid", and returns
// the result and that pid. The cancel waits for the file, so nothing
// depends on timing.
func runUntilPid(t *testing.T, command string, timeout float64) (Result, int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to check processes with")
	}
	ws := t.TempDir()
	pidfile := filepath.Join(ws, "pid")
	env := Env{Cwd: ws, Preset: PresetFullAccess, KillGrace: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	if timeout == 0 {
		go func() {
			for {
				if b, _ := os.ReadFile(pidfile); strings.HasSuffix(string(b), "\n") {
					cancel()
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}
	a := map[string]any{"command": command}
	if timeout > 0 {
		a["timeout"] = timeout
	}
	tool, _ := Lookup(NameBash)
	r := tool.Run(ctx, env, js(t, a), nil)
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatalf("the command wrote no pid: %s", r.Text())
	}
	return r, pid
}

// coreutils timeout moves itself and its command to a process group of
// their own; an abort still ends them, as they stay in the shell's session.
func TestAbortKillsAProcessGroupOfTheShellsSession(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no coreutils timeout")
	}
	r, pid := runUntilPid(t, `timeout 100 sh -c 'echo $$ > pid; exec sleep 100'; echo done`, 0)
	wantErr(t, r, "aborted")
	waitGone(t, []int{pid})
}

// Jobs of a shell under set -m get their own groups; a timeout ends them,
// with SIGKILL for one that ignores SIGTERM and keeps forking.
func TestTimeoutKillsJobControlGroups(t *testing.T) {
	r, pid := runUntilPid(t, `set -m; sh -c 'trap "" TERM; echo $$ > pid; while :; do sleep 1; done' & wait`, 1)
	wantErr(t, r, "timed out")
	waitGone(t, []int{pid})
}

// The liveness check sees a session member outside the shell's group: the
// abort does not return while it runs, so a member that survives SIGTERM
// is SIGKILLed after the grace, not left behind.
func TestAbortWaitsForSessionMembersOutsideTheGroup(t *testing.T) {
	if _, ok := sessionMembers(os.Getpid()); !ok {
		t.Skip("/proc cannot list sessions here")
	}
	cmd := exec.Command("sh", "-c", "set -m; sleep 100 & echo $!; wait")
	startGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if child == 0 {
		t.Fatalf("no child pid in %q", buf[:n])
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	pids, _ := sessionMembers(cmd.Process.Pid)
	found := false
	for _, p := range pids {
		found = found || p == child
	}
	if !found || !sessionAlive(cmd.Process.Pid) {
		t.Errorf("session %d members %v miss the job %d", cmd.Process.Pid, pids, child)
	}
	killGroup(cmd, time.Second, waitDone)
	waitGone(t, []int{child})
	if sessionAlive(cmd.Process.Pid) {
		t.Error("session still alive after killGroup")
	}
}
