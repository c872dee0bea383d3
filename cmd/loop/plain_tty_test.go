package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startPlain is plain loop (no subcommand) with stdin, stdout and stderr
// on a pseudo-terminal that is its controlling terminal: a person typing
// loop, with args.
func startPlain(t *testing.T, data, proj string, args ...string) *chatTerm {
	t.Helper()
	return startLoopOn(t, data, proj, false, args...)
}

// exitStatus waits for the process to end and returns its exit status.
func (c *chatTerm) exitStatus() int {
	c.t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			c.t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		c.t.Fatalf("loop did not exit:\n%s", strings.Join(c.screen(), "\n"))
	}
	return -1
}

// Bare loop at a terminal is the chat, not the JSON-RPC server: the words
// given are its first prompt, sent at once and shown as typed, and its new
// session starts under the ask preset.
func TestPlainLoopOnATerminalOpensTheChatWithItsFirstPrompt(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"Hi from the model."}]}]}`)
	c := startPlain(t, data, proj, "what", "is", "this?")
	c.see("loop chat: session ")
	c.see(", model fake/m1, ask.")
	c.see("> what is this?")
	c.see("Hi from the model.")
	screen := strings.Join(c.screen(), "\n")
	if regexp.MustCompile(`-32700|paste a JSON-RPC request`).MatchString(screen) {
		t.Fatalf("the server answered a person at a terminal:\n%s", screen)
	}
}

// /open takes any unique prefix of a session id, as every command that
// takes an id does.
func TestChatOpensASessionByAPrefixOfItsID(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"saved answer"}]}]}`)
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	run := loopCommand(bin, data, proj, "run", "--output", "json", "first")
	run.Env = append(run.Env, ttyEnv+"=none")
	out, err := run.Output()
	if err != nil {
		t.Fatalf("loop run: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`"sessionId":"([^"]+)"`).FindSubmatch(out)
	if id == nil {
		t.Fatalf("loop run: %s", out)
	}
	c := startPlain(t, data, proj)
	c.see("loop chat: session ")
	c.see("> ")
	c.keys("/open " + string(id[1][:30]) + "\r")
	// The session is titled by its first message (no model title: loop run).
	c.see("opened " + string(id[1]) + " first: 2 messages")
	c.keys("\x04")
	if code := c.exitStatus(); code != exitOK {
		t.Fatalf("exit status %d:\n%s", code, strings.Join(c.screen(), "\n"))
	}
}

// A flag only the server has, typed at a terminal, is said to belong to
// loop serve, rather than refused as unknown to the chat.
func TestPlainLoopOnATerminalPointsServerFlagsToServe(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[]}`)
	c := startPlain(t, data, proj, "--framing", "ndjson")
	c.see("loop: --framing is a flag of the server, and on a terminal loop opens the chat: run loop serve --framing")
	if code := c.exitStatus(); code != exitUsage {
		t.Fatalf("exit status %d", code)
	}
}
