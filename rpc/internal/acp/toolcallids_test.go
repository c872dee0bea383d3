package acp_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// The model numbers its calls afresh in every reply, as some providers do.
const repeatedIDsScript = `{"log":"requests.jsonl","turns":[
 {"match":"one","steps":[{"toolCall":{"id":"call_1","name":"write","arguments":{"path":"a.txt","content":"A\n"}}}]},
 {"match":"one","steps":[{"text":"wrote a"}]},
 {"match":"two","steps":[{"toolCall":{"id":"call_1","name":"write","arguments":{"path":"b.txt","content":"B\n"}}}]},
 {"match":"two","steps":[{"text":"wrote b"}]}
]}`

// cards are a session's tool call cards as a client shows them: id,
// title and status, in the order they were announced.
func cards(updates []map[string]any) []string {
	f := fold(updates, true)
	var out []string
	for _, id := range f.Order {
		c := f.Tools[id]
		out = append(out, id+" "+c["title"].(string)+" "+c["status"].(string))
	}
	return out
}

// ACP requires tool call ids unique within a session: two calls the
// provider both named call_1 get two cards, live and when session/load
// replays the session in another process, and their permission requests
// point at the right one; the model still gets call_1 back for both.
func TestRepeatedProviderToolCallIDsGetCardsOfTheirOwnLiveAndOnLoad(t *testing.T) {
	h := newHarness(t, repeatedIDsScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	c.rec.answer = selectOption("allow_once")
	c.mustPrompt(ns.SessionId, "one")
	c.mustPrompt(ns.SessionId, "two")

	want := []string{"call_1 Write a.txt completed", "call_1-2 Write b.txt completed"}
	if got := cards(c.frames.updates(sid)); !slices.Equal(got, want) {
		t.Fatalf("live cards:\n got %q\nwant %q", got, want)
	}
	var asked []string
	for _, p := range c.rec.permissions {
		asked = append(asked, string(p.ToolCall.ToolCallId))
	}
	if !slices.Equal(asked, []string{"call_1", "call_1-2"}) {
		t.Fatalf("permission requests point at %q", asked)
	}

	h.restart()
	c2 := h.connect()
	c2.initialize()
	if _, err := c2.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if got := cards(c2.frames.updates(sid)); !slices.Equal(got, want) {
		t.Fatalf("replayed cards:\n got %q\nwant %q", got, want)
	}

	// What the model was sent: its own id, for both calls and results.
	f, err := os.Open(filepath.Join(h.root, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sent []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Messages []struct {
				ToolCallID string `json:"toolCallId"`
				Content    []struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		for _, m := range e.Messages {
			if m.ToolCallID != "" {
				sent = append(sent, m.ToolCallID)
			}
			for _, b := range m.Content {
				if b.Type == "toolCall" {
					sent = append(sent, b.ID)
				}
			}
		}
	}
	// The last request holds both calls and both results.
	if len(sent) < 4 || slices.ContainsFunc(sent, func(id string) bool { return id != "call_1" }) {
		t.Fatalf("the model was sent the ids %q, want call_1 only", sent)
	}
}
