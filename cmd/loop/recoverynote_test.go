package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// The line naming a waiting recovery file gives a command to paste: a
// path with spaces or quotes stays one word for the shell.
func TestRecoveryNoteCommandIsOneShellWordPerArgument(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.local/share/loop/sessions/global/loop-recovery-x-1.json": "/home/me/.local/share/loop/sessions/global/loop-recovery-x-1.json",
		"/tmp/my data/loop-recovery-x-1.json":                               "'/tmp/my data/loop-recovery-x-1.json'",
		"/tmp/it's/f.json":                                                  `'/tmp/it'\''s/f.json'`,
		"":                                                                  "''",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestChatOpeningASessionWithARecoveryFileWaitingSaysSo: loop chat -c
// opens the session a recovery file waits for and names the file and the
// command that commits it, before the chat starts.
func TestChatOpeningASessionWithARecoveryFileWaitingSaysSo(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"first answer"}]}]}`)
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	out, err := loopCommand(bin, data, proj, "run", "--output", "json", "one").Output()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.SessionID == "" {
		t.Fatalf("loop run: %v\n%s", err, out)
	}
	root, err := store.OpenRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := root.Find(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := root.Open(ws, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	hdr, msgs, timings := st.Header(), st.Messages(), st.Timings()
	st.Close()
	msgs = append(msgs[:len(msgs):len(msgs)],
		convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "two"}}},
		convo.Message{Role: convo.RoleAssistant, Timestamp: 1795972390005, StopReason: convo.StopEnd, Content: []convo.Block{{Type: convo.BlockText, Text: "a2"}}})
	body, err := store.EncodeRecovery(&store.Recovery{SessionID: res.SessionID, WorkspaceID: hdr.WorkspaceID, Cwd: hdr.Cwd, Error: "save history: no space left on device",
		Header: hdr, Timings: timings, Messages: msgs, Usage: hdr.Usage})
	if err != nil {
		t.Fatal(err)
	}
	path := root.Layout().Recovery(ws, res.SessionID, 1795972391000)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, data, proj, "-c")
	c.see("loop chat: session " + res.SessionID + " has an unsaved result waiting in " + path + ": loop import " + path + " commits it")
}
