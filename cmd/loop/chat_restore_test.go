package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestChatRestoreOnTheSessionAnUndoKeptGetsItsFilesBack: /undo says how
// to get the run's files back, and /open of the session it kept of the
// dropped run, then /restore, puts them back as the run left them.
func TestChatRestoreOnTheSessionAnUndoKeptGetsItsFilesBack(t *testing.T) {
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

	c.keys("/undo\r")
	c.see("then /restore to get its files back")
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a.txt after /undo: %v", err)
	}
	uuid := regexp.MustCompile(`what was dropped is session ?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	m := uuid.FindStringSubmatch(strings.Join(c.screen(), ""))
	if m == nil {
		t.Fatalf("/undo named no session:\n%s", strings.Join(c.screen(), "\n"))
	}
	c.keys("/restore 9\r")
	c.see("usage: /restore [MESSAGECOUNT] (a number of saved messages, 0 to 0)")
	c.keys("/open " + m[1] + "\r")
	c.see("made it")
	c.idle()
	c.keys("/restore\r")
	c.see("put back at 4 messages: a.txt")
	if b, _ := os.ReadFile(a); string(b) != "made\n" {
		t.Fatalf("a.txt after /restore: %q", b)
	}
}
