package engine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

func TestRetriedModelRequestPublishesARetryEvent(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 1 {
			http.Error(w, `{"error":{"message":"upstream hiccup"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(chatText("fine")))
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	cfg := `{"titles":{"enabled":false},"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `","retry":{"attempts":3,"baseDelayMs":1},"models":[{"id":"gpt-t"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	var retries []*engine.RetryEvent
	var notes []rpc.Notification
	e.Subscribe(func(ev engine.Event) {
		if r, ok := ev.Payload.(*engine.RetryEvent); ok {
			mu.Lock()
			retries = append(retries, r)
			if note, ok := rpc.NotificationOf(ev); ok {
				notes = append(notes, note)
			}
			mu.Unlock()
		}
	})
	s, err := e.NewInMemorySession(t.TempDir(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := runPrompt(t, e, s, "hello"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %s %+v", got.Outcome, got.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 1 {
		t.Fatalf("%d retry events, want 1", len(retries))
	}
	r := retries[0]
	run := s.Snapshot().State.PromptTimings[0].ID
	if r.SessionID != s.ID() || r.RunID != run || r.Attempt != 2 || r.Of != 3 || r.Delay != time.Millisecond || r.Status != 500 || r.Message == "" {
		t.Fatalf("retry event %+v (run %s)", r, run)
	}
	if len(notes) != 1 || notes[0].Method != "session/retry" {
		t.Fatalf("notifications %+v", notes)
	}
}
