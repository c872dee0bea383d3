package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// countingProvider is an OpenAI-compatible provider on 127.0.0.1 that
// answers every request with one short streamed reply and keeps each
// request's body.
type countingProvider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newCountingProvider(t *testing.T) *countingProvider {
	p := &countingProvider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, string(body))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Answer"}}]}

data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}

data: [DONE]

`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *countingProvider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// loop run exits with its answer, so it never asks for a background title
// (docs/cli.md), even where config.json turns titles on: the first run of
// each new session asks the model once, for the answer only.
func TestRunNeverAsksForABackgroundTitle(t *testing.T) {
	prov := newCountingProvider(t)
	dir := t.TempDir()
	data, proj := filepath.Join(dir, "data"), filepath.Join(dir, "proj")
	for _, d := range []string{data, proj} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"titles":{"enabled":true},"providers":{"oa":{"api":"openai","baseUrl":"` + prov.srv.URL + `","apiKeyEnv":"LOOP_TEST_KEY","titles":true,"retry":{"attempts":1},"models":[{"id":"gpt-test"}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOOP_TEST_KEY", "sk-test")
	t.Setenv(ttyEnv, "none")
	// Each run is a new session, whose first run is what a title follows.
	const runs = 10
	for i := range runs {
		var stdout, stderr bytes.Buffer
		format := []string{"text", "json", "stream-json"}[i%3]
		code := run([]string{"run", "--data-dir", data, "--cwd", proj, "--output", format, "name this conversation"}, nil, &stdout, &stderr)
		if code != exitOK {
			t.Fatalf("run %d: exit status %d; stderr:\n%s", i, code, stderr.String())
		}
	}
	reqs := prov.requests()
	for _, r := range reqs {
		if strings.Contains(r, "Write a title for the conversation") {
			t.Fatalf("loop run asked for a title: %s", r)
		}
	}
	if len(reqs) != runs {
		t.Fatalf("%d requests for %d runs", len(reqs), runs)
	}
}
