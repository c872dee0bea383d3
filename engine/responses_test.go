package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// A session on the Responses API sends each reasoning item back in every
// later request: within the tool loop, on the next prompt, and after the
// session is opened again by a new engine (the store keeps the item's id
// and encrypted content); its export keeps them too.
func TestResponsesReasoningItemsCarryAcrossToolTurnsAndReopen(t *testing.T) {
	srv := providertest.NewResponsesServer(t,
		providertest.ResponsesReasoningToolCall("rs_1", "Listing first.", "enc-ONE", "call_1", "ls", `{"path":"."}`),
		providertest.ResponsesText("one"),
		providertest.ResponsesText("two"),
	)
	root := t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai-responses","baseUrl":"` + srv.URL + `/v1","titles":false,"retry":{"attempts":1},"models":[{"id":"gpt-r","contextWindow":100000}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-r"}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *engine.Engine {
		e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ConfigError(); err != nil {
			t.Fatal(err)
		}
		return e
	}
	prompt := func(s *engine.Session, text string) {
		t.Helper()
		if _, err := s.Prompt(engine.PromptInput{RequestID: "r-" + text, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if le := s.Snapshot().State.LastError; le != nil {
			t.Fatalf("%s: %+v", text, le)
		}
	}
	e := open()
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	prompt(s, "first")
	msgs := s.Snapshot().State.Messages
	if len(msgs) != 4 || msgs[1].Content[0].Type != convo.BlockThinking || msgs[1].Content[0].Text != "Listing first." {
		t.Fatalf("history after the first prompt: %+v", msgs)
	}
	if err := e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}

	e = open()
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	s2, err := e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	prompt(s2, "second")

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	const item = `{"type":"reasoning","summary":[{"type":"summary_text","text":"Listing first."}],"encrypted_content":"enc-ONE"}`
	for i, r := range reqs[1:] {
		body := string(r.Body)
		at := strings.Index(body, item)
		call := strings.Index(body, `{"type":"function_call","call_id":"call_1","name":"ls"`)
		out := strings.Index(body, `{"type":"function_call_output","call_id":"call_1"`)
		if at < 0 || call < at || out < call {
			t.Errorf("request %d does not carry the reasoning item before its call and output:\n%s", i+2, body)
		}
	}
	if strings.Contains(string(reqs[0].Body), "enc-ONE") {
		t.Error("the first request carries reasoning it has not had yet")
	}
	exp, err := s2.Export(engine.ExportJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(exp), `"signature":"enc-ONE"`) || !strings.Contains(string(exp), `"id":"rs_1"`) {
		t.Errorf("the export lost the reasoning item:\n%s", exp)
	}
}
