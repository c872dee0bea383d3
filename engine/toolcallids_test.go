package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// publishedCallIDs lists a history's tool call and result ids in order.
func publishedCallIDs(msgs []convo.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == convo.RoleToolResult {
			out = append(out, "result "+m.ToolCallID)
		}
		for _, b := range m.Content {
			if b.Type == convo.BlockToolCall {
				out = append(out, "call "+b.ID)
			}
		}
	}
	return out
}

// A provider that numbers its calls afresh in every reply (call_1 each
// time) gets its own ids back in every request, while every id Loop
// publishes (tool events, messages and their deltas, snapshots) is unique in the session,
// the same live, after a compaction and after the session is opened again.
func TestToolCallIDsRepeatedByTheProviderArePublishedUniqueLiveAndAfterReload(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.OpenAIToolCall("call_1", "ls", `{"path":"."}`), providertest.OpenAIText("one"),
		providertest.OpenAIToolCall("call_1", "ls", `{"path":"."}`), providertest.OpenAIText("two"),
		providertest.OpenAIText("the summary"),
		providertest.OpenAIToolCall("call_1", "ls", `{"path":"."}`), providertest.OpenAIText("three"),
	)
	root := t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `/v1","titles":false,"retry":{"attempts":1},"models":[{"id":"gpt-t","contextWindow":100000}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
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
	e := open()
	var mu sync.Mutex
	var live []string
	e.Subscribe(func(ev engine.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch p := ev.Payload.(type) {
		case *engine.ToolEvent:
			live = append(live, "tool "+p.Event+" "+p.ToolCallID)
		case *engine.MessageEvent:
			if p.Event == "delta" && p.Type == "toolCall" {
				live = append(live, "delta call "+p.ToolCallID)
			}
			if p.Event == "end" && p.Message != nil {
				for _, id := range publishedCallIDs([]convo.Message{*p.Message}) {
					live = append(live, "message "+id)
				}
			}
		}
	})
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(text string) {
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
	prompt("first")
	prompt("second")
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatalf("compact: %v", err)
	}
	prompt("third")

	var want []string
	for _, id := range []string{"call_1", "call_1-2", "call_1-3"} {
		want = append(want, "delta call "+id, "message call "+id, "tool start "+id, "tool end "+id, "message result "+id)
	}
	mu.Lock()
	got := slices.Clone(live)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("live ids:\n got %q\nwant %q", got, want)
	}
	wantHistory := []string{"call call_1", "result call_1", "call call_1-2", "result call_1-2", "call call_1-3", "result call_1-3"}
	if got := publishedCallIDs(s.Snapshot().State.Messages); !slices.Equal(got, wantHistory) {
		t.Fatalf("snapshot ids %q, want %q", got, wantHistory)
	}

	// The provider pairs calls and results by its own ids: every request
	// carries call_1 only, also after the compaction.
	reqs := srv.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d requests, want 7", len(reqs))
	}
	for i, r := range reqs {
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		r.Decode(t, &body)
		for _, m := range body.Messages {
			if m.Role == "tool" && m.ToolCallID != "call_1" {
				t.Errorf("request %d: a tool result carries %q", i, m.ToolCallID)
			}
			for _, c := range m.ToolCalls {
				if c.ID != "call_1" {
					t.Errorf("request %d: a tool call carries %q", i, c.ID)
				}
			}
		}
	}
	if err := e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}

	// Opened again, the history gives the same ids, and the store still
	// holds the provider's.
	e = open()
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	s2, err := e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := publishedCallIDs(s2.Snapshot().State.Messages); !slices.Equal(got, wantHistory) {
		t.Fatalf("reloaded ids %q, want %q", got, wantHistory)
	}
	// A tail that starts with a result whose call is before it.
	if got := publishedCallIDs(s2.SnapshotFrom(6).State.Messages); !slices.Equal(got, wantHistory[3:]) {
		t.Fatalf("ids of a tail from index 6: %q, want %q", got, wantHistory[3:])
	}
	exp, err := s2.Export(engine.ExportJSON)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(exp), `"call_1-`); n != 0 {
		t.Fatalf("the stored history holds %d derived ids", n)
	}
}
