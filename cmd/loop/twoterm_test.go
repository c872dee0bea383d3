package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Two terminals, one conversation (docs/cli.md): an idle loop chat holds no
// lock on its session, so loop run -c in another terminal continues it,
// and the chat's next prompt shows what was said there. These tests wait
// for lock states (the session directory's flock), never for time.

// sessionDir is the one session directory of the data root.
func sessionDir(t *testing.T, data string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*-*"))
	if len(dirs) != 1 {
		t.Fatalf("sessions: %v", dirs)
	}
	return dirs[0]
}

// holdLock takes the session directory's flock as a writer does, waiting
// (polling its state) until the process that has it lets go; release
// gives it back.
func holdLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("the lock of %s was never let go", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() { f.Close() }
}

// waitIdle waits until no process holds the session's lock.
func waitIdle(t *testing.T, dir string) { holdLock(t, dir)() }

// loopRun runs loop run in proj and returns its exit status and output.
func loopRun(t *testing.T, data, proj string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	cmd := loopCommand(bin, data, proj, append([]string{"run"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestIdleChatLetsLoopRunContinueItsConversation(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"first","steps":[{"text":"answer one"}]},
		{"match":"second","steps":[{"text":"answer two"}]},
		{"match":"third","steps":[{"text":"answer three"}]},
		{"match":"racing","steps":[{"text":"answer race"}]}
	]}`)
	c := startChat(t, data, proj)
	c.see("loop chat: session ")
	c.keys("first question\r")
	c.see("answer one")
	dir := sessionDir(t, data)
	waitIdle(t, dir)

	code, out, errOut := loopRun(t, data, proj, "-c", "second question")
	if code != 0 || !strings.Contains(out, "answer two") {
		t.Fatalf("loop run -c beside the idle chat: status %d\n%s\n%s", code, out, errOut)
	}

	c.keys("third question\r")
	c.see("(continued elsewhere: 2 new messages)")
	c.see("> second question")
	c.see("answer two")
	c.see("answer three")
	waitIdle(t, dir)

	// Two starting at once: whichever takes the lock first wins (here the
	// test, as a third process); the others are refused with
	// session_locked and nothing of theirs is written.
	release := holdLock(t, dir)
	code, _, errOut = loopRun(t, data, proj, "-c", "racing run")
	if code == 0 || !strings.Contains(errOut, "another process writes session") {
		t.Fatalf("loop run -c while another process writes: status %d\n%s", code, errOut)
	}
	c.keys("racing chat\r")
	c.see("not sent: session_locked")
	release()
	code, out, errOut = loopRun(t, data, proj, "-c", "racing run")
	if code != 0 || !strings.Contains(out, "answer race") {
		t.Fatalf("loop run -c once free: status %d\n%s\n%s", code, out, errOut)
	}
	msgs, err := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{"first question": 1, "second question": 1, "third question": 1, "racing run": 1, "racing chat": 0} {
		if n := strings.Count(string(msgs), text); n != want {
			t.Errorf("the history holds %q %d times, want %d", text, n, want)
		}
	}
}

// kill -9 of loop run while it runs, holding the lock: the idle chat's
// next prompt takes the lock and recovers the run from the journal, as an
// open would, and shows it.
func TestChatRecoversTheRunOfALoopRunKilledBesideIt(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"first","steps":[{"text":"answer one"}]},
		{"match":"doomed","steps":[{"text":"partial"},{"touchFile":"reached"},{"hang":true}]},
		{"match":"after","steps":[{"text":"answer after"}]}
	]}`)
	c := startChat(t, data, proj)
	c.see("loop chat: session ")
	c.keys("first question\r")
	c.see("answer one")
	dir := sessionDir(t, data)
	waitIdle(t, dir)

	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	run := loopCommand(bin, data, proj, "run", "-c", "doomed question")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, filepath.Join(data, "reached"))
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()

	c.keys("after that\r")
	c.see("(continued elsewhere: 1 new message)")
	c.see("> doomed question")
	c.see("answer after")
	waitIdle(t, dir)
	msgs, err := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(msgs), "doomed question"); n != 1 {
		t.Fatalf("the killed run's prompt is in the history %d times", n)
	}
	timings, err := os.ReadFile(filepath.Join(dir, "timings.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(timings), `"interrupted":true`) {
		t.Fatalf("no interrupted run among the timings:\n%s", timings)
	}
}
