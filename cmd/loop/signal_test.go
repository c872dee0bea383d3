package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/testenv"
)

// failingSave is a script whose one run waits at a gate, so the test can
// make the session's saves fail before the run commits (the header's
// temporary name made a directory).
const failingSave = `{"turns":[{"steps":[{"touchFile":"reached"},{"waitFile":"gate"},{"text":"kept"}]}]}`

// breakSaveAtGate waits until the run reaches the script's gate, makes
// the session's header unpublishable, and opens the gate. It returns the
// session's directory and the blocker to remove to repair the disk.
func breakSaveAtGate(t *testing.T, data string) (dir, blocker string) {
	t.Helper()
	waitForFile(t, filepath.Join(data, "reached"))
	dirs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("sessions: %v", dirs)
	}
	blocker = filepath.Join(dirs[0], "header.json.tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(data, "gate"))
	return dirs[0], blocker
}

// checkRecovered checks that the unsaved result of the session in dir is
// in exactly one recovery file beside it, and that nothing else (no
// temporary file of that write) is there.
func checkRecovered(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var recovery []string
	for _, e := range entries {
		switch name := e.Name(); {
		case name == filepath.Base(dir):
		case strings.HasPrefix(name, "loop-recovery-"+filepath.Base(dir)+"-") && strings.HasSuffix(name, ".json"):
			recovery = append(recovery, name)
		default:
			t.Errorf("left beside the session: %s", name)
		}
	}
	if len(recovery) != 1 {
		t.Fatalf("recovery files: %v", recovery)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), recovery[0]))
	if err != nil || !strings.Contains(string(b), `"text": "kept"`) {
		t.Fatalf("the recovery file lacks the unsaved answer: %v\n%s", err, b)
	}
}

// exitStatus is the status of a process that exited, or fails the test
// when a signal killed it.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("killed by %v: the result was not written anywhere", ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatal(err)
	return 0
}

// processEndingSignals are the signals that end a process unless it
// handles them.
var processEndingSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}

// A result loop run cannot save waits for /flush on the terminal; closing
// that terminal (SIGHUP), Ctrl-C, kill or Ctrl-\ gives up waiting, and the
// result goes to its recovery file (exit status 3), never lost.
func TestSignalWhileWaitingForFlushWritesTheRecoveryFile(t *testing.T) {
	for _, sig := range processEndingSignals {
		t.Run(sig.String(), func(t *testing.T) {
			data, proj := newDataRoot(t, failingSave)
			r := startOnTerminal(t, data, proj, "--output", "json", "save me")
			dir, _ := breakSaveAtGate(t, data)
			r.waitFor("loop (unsaved)> ")
			if err := r.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := exitStatus(t, r.cmd.Wait()); code != exitUnsaved {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, exitUnsaved, r.stderr.String())
			}
			if !strings.Contains(r.stderr.String(), "its unsaved result is in "+filepath.Dir(dir)+"/loop-recovery-") {
				t.Errorf("stderr does not name the recovery file:\n%s", r.stderr.String())
			}
			checkRecovered(t, dir)
		})
	}
}

// loop chat's input ends (its terminal closed) while a result is unsaved:
// the chat shuts down, and its save is retried and then written to a
// recovery file. A signal that comes meanwhile (a closed terminal sends
// SIGHUP too) must not end the process before that file is written, nor
// leave its temporary file behind. The header's temporary name is a full
// FIFO here: the retry opens it and then cannot write until the test
// empties it, so the signal comes exactly while the shutdown saves.
func TestSignalWhileChatShutsDownStillWritesTheRecoveryFile(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		testenv.Missing(t, "no /proc to see the chat's open files: %v", err)
	}
	for _, sig := range processEndingSignals {
		t.Run(sig.String(), func(t *testing.T) {
			data, proj := newDataRoot(t, failingSave)
			c := startChatOn(t, data, proj, true)
			c.idle()
			c.keys("save me\r")
			dir, blocker := breakSaveAtGate(t, data)
			c.see("not saved: ")
			if err := os.RemoveAll(blocker); err != nil {
				t.Fatal(err)
			}
			fifo := fullFIFO(t, blocker)
			c.closeKeyboard()
			waitUntilOpen(t, c.cmd.Process.Pid, blocker)
			// The shutdown's retry has the FIFO open and waits to write.
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			fifo.drain()
			err := <-c.done
			c.done <- err
			if code := exitStatus(t, err); code != exitUnsaved {
				t.Fatalf("exit status %d, want %d", code, exitUnsaved)
			}
			checkRecovered(t, dir)
		})
	}
}

// heldFIFO is a FIFO the test holds open for reading and writing.
type heldFIFO struct {
	t  *testing.T
	fd int
}

// fullFIFO makes a FIFO at path and fills its buffer: a writer that
// opens it gets in at once (the test's end reads), then waits in its
// first write until drain.
func fullFIFO(t *testing.T, path string) *heldFIFO {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	buf := make([]byte, 4096)
	for {
		_, err := syscall.Write(fd, buf)
		if err == syscall.EAGAIN {
			return &heldFIFO{t: t, fd: fd}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// drain empties the FIFO's buffer, so that a writer waiting on it goes on.
func (f *heldFIFO) drain() {
	buf := make([]byte, 4096)
	for {
		_, err := syscall.Read(f.fd, buf)
		if err == syscall.EAGAIN {
			return
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// waitUntilOpen waits until process pid has path open.
func waitUntilOpen(t *testing.T, pid int, path string) {
	t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(fdDir)
		for _, e := range entries {
			if fi, err := os.Stat(filepath.Join(fdDir, e.Name())); err == nil && os.SameFile(fi, want) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d never opened %s", pid, path)
}
