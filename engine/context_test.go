package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// The date, the permission preset and the project's instructions reach
// the model as Loop's context blocks in the user message where they
// change, never in the system prompt: a new day, another preset and a new
// AGENTS.md each leave the request before them, tools and history
// included, byte for byte as it was, also in a new process, and a prompt
// that changes nothing carries no context at all.
func TestContextChangesAreAppendedAndKeepThePrefix(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.OpenAIText("one"), providertest.OpenAIText("two"), providertest.OpenAIText("three"))
	root, work := t.TempDir(), t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `/v1","titles":false,"retry":{"attempts":1},"models":[{"id":"m","contextWindow":100000}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"m"}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 3, 1, 23, 59, 0, 0, time.Local).UnixMilli())
	open := func() *engine.Engine {
		e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }, Now: func() time.Time { return time.UnixMilli(now.Load()) }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	ws, err := e.AddWorkspace(work, "w")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.NewSession(ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(s *engine.Session, text string) {
		t.Helper()
		if _, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	prompt(s, "first")
	now.Add(int64(2 * time.Minute / time.Millisecond)) // the next day
	if _, err := s.SetPermission("workspace-write"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("Run make test."), 0o600); err != nil {
		t.Fatal(err)
	}
	prompt(s, "second")
	if err := e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}
	e = open()
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	if s, err = e.Session(s.ID()); err != nil {
		t.Fatal(err)
	}
	prompt(s, "third")

	type body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var reqs []body
	for _, r := range srv.Requests() {
		var b body
		r.Decode(t, &b)
		reqs = append(reqs, b)
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i < 3; i++ {
		if string(reqs[i].Tools) != string(reqs[0].Tools) {
			t.Errorf("request %d changes the tools", i+1)
		}
		for j, m := range reqs[i-1].Messages {
			if string(reqs[i].Messages[j]) != string(m) {
				t.Errorf("request %d changes message %d:\n was %s\n now %s", i+1, j, m, reqs[i].Messages[j])
			}
		}
	}
	system := string(reqs[0].Messages[0])
	if strings.Contains(system, "Today") || strings.Contains(system, "Permission preset") {
		t.Errorf("the system prompt holds what changes: %s", system)
	}
	user := func(r, i int) string { return string(reqs[r].Messages[i]) }
	if u := user(0, 1); !strings.Contains(u, "Today: 2026-03-01") || !strings.Contains(u, "Permission preset: read-only") || strings.Contains(u, "Project instructions") {
		t.Errorf("the first prompt's context: %s", u)
	}
	if u := user(1, 3); !strings.Contains(u, "Today: 2026-03-02") || !strings.Contains(u, "Permission preset: workspace-write") || !strings.Contains(u, "Run make test.") {
		t.Errorf("the second prompt's context: %s", u)
	}
	if u := user(2, 5); u != `{"role":"user","content":"third"}` {
		t.Errorf("a prompt that changes nothing: %s", u)
	}
	// The history keeps the context blocks, marked; the user's text is
	// what it was.
	msgs := s.Snapshot().State.Messages
	if msgs[2].Text() != "second" || msgs[2].Content[0].Attachment != convo.AttachmentContext || msgs[2].Content[0].Name != "date" {
		t.Errorf("the stored message: %+v", msgs[2])
	}
}
