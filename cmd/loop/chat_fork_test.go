package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChatForkAndRewindGoBackInTheConversation drives /rewind (the list
// of user messages, then a rewind to before one of them) and /fork in the
// chat on a pseudo-terminal.
func TestChatForkAndRewindGoBackInTheConversation(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"one","steps":[{"text":"first answer"}]},
		{"match":"two","steps":[{"text":"second answer"}]},
		{"match":"three","steps":[{"text":"third answer"}]},
		{"match":"four","steps":[{"text":"fourth answer"}]}
	]}`)
	c := startChat(t, data, proj)
	c.see("loop chat: session ")
	first := strings.Fields(strings.TrimPrefix(c.screen()[0], "loop chat: session "))[0]
	c.keys("question one\r")
	c.see("first answer")
	c.runsSettled(1)
	c.idle()
	c.keys("question two\r")
	c.see("second answer")
	c.runsSettled(2)
	c.idle()

	c.keys("/rewind\r")
	c.see("user messages (/rewind N continues from just before message N):")
	c.see("  0  question one")
	c.see("  1  question two")
	c.keys("/rewind 7\r")
	c.see("usage: /rewind [N] (N from 0 to 1; /rewind lists them)")
	c.keys("/rewind 1\r")
	c.see("rewound to before message 1 (2 messages kept); what was dropped is session ")
	c.keys("question three\r")
	c.see("third answer")
	c.runsSettled(3)
	c.idle()
	c.keys("/sessions\r")
	c.see("4 messages")

	c.keys("/fork 2\r")
	c.see("forked " + first + " at 2 messages: now in session ")
	c.keys("question four\r")
	c.see("fourth answer")
	c.runsSettled(4)
	c.idle()
	c.keys("/fork 9\r")
	c.see("invalid_params")
}

// TestChatRewindAsksAboutFilesAndUndoPutsThemBack: /rewind N asks with
// one key whether the files a dropped run changed go back too, and /undo
// takes the last run away with its file changes.
func TestChatRewindAsksAboutFilesAndUndoPutsThemBack(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"make","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"made\n"}}}]},
		{"steps":[{"text":"made it"}]},
		{"match":"change","steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"a.txt","content":"changed\n"}}}]},
		{"steps":[{"text":"changed it"}]}
	]}`)
	a := filepath.Join(proj, "a.txt")
	c := startChat(t, data, proj, "--permission", "full-access")
	c.idle()
	c.keys("make a file\r")
	c.see("made it")
	c.runsSettled(1)
	c.idle()
	c.keys("change the file\r")
	c.see("changed it")
	c.runsSettled(2)
	c.idle()

	c.keys("/rewind 1\r")
	c.see("put the files back too?")
	c.see("changed since: a.txt")
	c.see("[y] yes  [n] no")
	c.keys("a") // not an answer to a yes-or-no question
	c.keys("n")
	c.see("put the files back too? (no keeps them as they are): no")
	c.see("rewound to before message 1 (4 messages kept); what was dropped is session ")
	if b, _ := os.ReadFile(a); string(b) != "changed\n" {
		t.Fatalf("a.txt after a rewind that kept the files: %q", b)
	}

	c.keys("/undo\r")
	c.see("undid the last run (0 messages kept, files put back)")
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		b, _ := os.ReadFile(a)
		t.Fatalf("a.txt after /undo of the run that made it: %q %v", b, err)
	}
}

// runsSettled waits until the chat has shown n runs' usage lines, in its
// scrollback and screen: a run's answer shows before the run is saved,
// its usage line after.
func (c *chatTerm) runsSettled(n int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got := 0
		for _, r := range c.screen() {
			if strings.HasPrefix(strings.TrimSpace(r), "(") && strings.Contains(r, " tokens") {
				got++
			}
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("the chat never showed %d usage lines:\n%s", n, strings.Join(c.screen(), "\n"))
}

func TestChatRewindQuestionCancelledAndUndoAsksBeforeOverwritingAFileChangedOutsideLoop(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"make","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"made\n"}}}]},
		{"steps":[{"text":"made it"}]}
	]}`)
	a := filepath.Join(proj, "a.txt")
	c := startChat(t, data, proj, "--permission", "full-access")
	c.idle()
	c.keys("make a file\r")
	c.see("made it")
	c.runsSettled(1)
	c.idle()
	if err := os.WriteFile(a, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Esc puts the files question away, and the rewind with it.
	c.keys("/rewind 0\r")
	c.see("[y] yes  [n] no  [Esc] cancel")
	c.keys("\x1b")
	c.see("rewind cancelled: nothing changed")
	if b, _ := os.ReadFile(a); string(b) != "mine\n" {
		t.Fatalf("a.txt after a cancelled rewind: %q", b)
	}

	// /undo finds a.txt changed outside Loop: it asks, and no keeps
	// both the file and the conversation.
	c.keys("/undo\r")
	c.see("overwrite them too?")
	c.see("changed outside Loop since the agent left them: a.txt")
	c.keys("n")
	c.see("nothing changed: the files and the conversation are as they were")
	if b, _ := os.ReadFile(a); string(b) != "mine\n" {
		t.Fatalf("a.txt after /undo answered no: %q", b)
	}
	c.idle()
	c.keys("/undo\r")
	c.see("changed outside Loop since the agent left them: a.txt") // the question is up again
	c.keys("y")
	c.see("undid the last run (0 messages kept, files put back)")
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a.txt after /undo answered yes: %v", err)
	}
}
