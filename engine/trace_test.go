package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

const scriptedConfig = `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}%s}`

func traceTestEngine(t *testing.T, root, config string, opts Options) *Engine {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(`{"turns":[{"steps":[{"text":"done"}]},{"steps":[{"text":"again"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.DataRoot = root
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ConfigError(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), Abort) })
	return e
}

func promptAndWait(t *testing.T, s *Session, text string) {
	t.Helper()
	if _, err := s.Prompt(PromptInput{RequestID: "r-" + text, Text: text}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if le := s.Snapshot().State.LastError; le != nil {
		t.Fatalf("run failed: %+v", le)
	}
}

// allTraceBytes concatenates every file under the data root's traces.
func allTraceBytes(t *testing.T, root string) []byte {
	t.Helper()
	var all []byte
	_ = filepath.WalkDir(filepath.Join(root, "traces"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		return nil
	})
	return all
}

// fakeOpenAI answers every chat completions request with one short text.
func fakeOpenAI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTraceHoldsNoKeyFromEnvironmentHeadersOrBaseURL(t *testing.T) {
	srv := fakeOpenAI(t)
	root := t.TempDir()
	env := map[string]string{
		"OPENAI_API_KEY": "sk-openai-env-998877",
		"MY_KEY":         "sk-apikeyenv-112233",
		"HDR_KEY":        "hdr-key-556677",
	}
	base := strings.Replace(srv.URL, "http://", "http://trace-user:url-pass-445566@", 1) + "/v1?api-version=qv-secret-7788&x=1"
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + base + `","apiKeyEnv":"MY_KEY",` +
		`"headers":{"X-Api-Key":"$HDR_KEY","Authorization-Extra":"literal-credential-4321","X-Plain":"visible"},"titles":false,"models":[{"id":"gpt-t"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
	e := traceTestEngine(t, root, cfg, Options{Getenv: func(k string) string { return env[k] }})
	ws, err := e.AddWorkspace(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.CreateSession(ws.ID, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The user pastes keys into the prompt: the body sent has them, the
	// trace does not.
	promptAndWait(t, s, "my keys are sk-apikeyenv-112233 and sk-openai-env-998877")
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	all := allTraceBytes(t, root)
	if !bytes.Contains(all, []byte(`"type":"request"`)) || !bytes.Contains(all, []byte(`"X-Plain":"visible"`)) {
		t.Fatalf("no request recorded:\n%s", all)
	}
	for _, secret := range []string{"sk-openai-env-998877", "sk-apikeyenv-112233", "hdr-key-556677", "literal-credential-4321", "url-pass-445566", "trace-user", "qv-secret-7788"} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("the trace holds %q:\n%s", secret, all)
		}
	}
	if bytes.Contains(all, []byte("Bearer")) {
		t.Errorf("the trace holds the authorization header:\n%s", all)
	}
}

// syncBuffer is a log destination safe for the writer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// engineWithBrokenTraces is a traced engine whose every trace write fails
// (a file stands where the traces directory belongs), logging through h.
func engineWithBrokenTraces(t *testing.T, h slog.Handler) (e *Engine, root string) {
	t.Helper()
	root = t.TempDir()
	if err := os.WriteFile(store.NewLayout(root).Traces(), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	return traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, ""), Options{Logger: slog.New(h)}), root
}

func TestTraceWriteFailureLeavesTheSessionAndItsCommitsAlone(t *testing.T) {
	var logs syncBuffer
	e, _ := engineWithBrokenTraces(t, slog.NewTextHandler(&logs, nil))
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, s, "one")
	promptAndWait(t, s, "two")
	id := s.ID()
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "trace") || !strings.Contains(logs.String(), "incomplete") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
	msgs, err := e.Root().ReadMessages("", id, 0, 4)
	if err != nil || len(msgs) != 4 || msgs[3].Text() != "again" {
		t.Fatalf("committed history %d messages, %v", len(msgs), err)
	}
}

func TestInMemorySessionsAndTracesOffWriteNoTrace(t *testing.T) {
	for name, extra := range map[string]string{"in memory": "", "traces off": `,"traces":{"enabled":false}`} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			e := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, extra), Options{})
			var s *Session
			var err error
			if name == "in memory" {
				s, err = e.NewInMemorySession(t.TempDir(), SessionOptions{})
			} else {
				s, err = e.NewSession("")
			}
			if err != nil {
				t.Fatal(err)
			}
			promptAndWait(t, s, "one")
			if err := e.Shutdown(context.Background(), Drain); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(root, "traces")); !os.IsNotExist(err) {
				t.Fatalf("traces written: %v", err)
			}
		})
	}
}

func TestTraceRetentionRemovesTracesOlderThanTheWindow(t *testing.T) {
	root := t.TempDir()
	old := filepath.Join(root, "traces", "global", "old-session")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(old, trace.SegmentName(1))
	if err := os.WriteFile(seg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-3 * 24 * time.Hour)
	if err := os.Chtimes(seg, past, past); err != nil {
		t.Fatal(err)
	}
	e := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, `,"traces":{"retentionDays":2}`), Options{})
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, s, "one")
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a trace older than the window is still there: %v", err)
	}
	if !trace.IsDir(e.TraceDir("", s.ID())) {
		t.Errorf("the new session's trace is missing")
	}
}

func TestTraceRecordsPurposeRunAndToolExecution(t *testing.T) {
	tr := scriptedTrace(t, `{"turns":[{"steps":[{"toolCall":{"id":"t1","name":"ls","arguments":{"path":"."}}}]},{"steps":[{"text":"listed"}]}]}`, "list")
	var kinds []string
	for _, r := range tr.Records {
		k := r.Type
		switch r.Type {
		case trace.TypeCall:
			k += ":" + r.Purpose + ":" + r.RequestID
			if len(r.Logical) == 0 {
				t.Errorf("a scripted call without its logical request: %+v", r)
			}
		case trace.TypeTool:
			k += ":" + r.Name + ":" + r.Outcome
		case trace.TypeResult:
			k += ":" + r.StopReason
		}
		kinds = append(kinds, k)
	}
	want := "trace config prompt call:main:r-list result:toolUse tool:ls:ok call:main:r-list result:stop end"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("records\n%s\nwant\n%s", got, want)
	}
}

func TestTraceRecordsRetriesFailuresAndResumedCalls(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		switch k {
		case 1: // retried: nothing streamed yet
			http.Error(w, `{"error":{"message":"busy, try again"}}`, http.StatusServiceUnavailable)
		case 2: // cut after output: the run fails, resumable
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n")
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"whole\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `","titles":false,"retry":{"attempts":3,"baseDelayMs":1},"models":[{"id":"gpt-t"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
	e := traceTestEngine(t, root, cfg, Options{Getenv: func(string) string { return "" }})
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(PromptInput{RequestID: "r1", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(e.TraceDir("", s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Records {
		k := r.Type
		switch r.Type {
		case trace.TypeCall:
			k = fmt.Sprintf("call%d:%s", r.Call, r.Purpose)
		case trace.TypeRequest:
			k = fmt.Sprintf("request%d.%d", r.Call, r.Attempt)
		case trace.TypeResponse:
			k = fmt.Sprintf("status%d", r.Status)
		case trace.TypeError:
			k = fmt.Sprintf("error(retryable=%v)", r.Retryable)
		case trace.TypeResult:
			k = "result:" + r.StopReason
		}
		got = append(got, k)
	}
	want := "trace config prompt call1:main request1.1 status503 error(retryable=true) request1.2 status200 event error(retryable=true) result:error end " +
		"resume call2:resume request2.1 status200 event event result:stop end"
	if strings.Join(got, " ") != want {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// A call to a provider without an HTTP body records the messages since the
// model last answered, not the whole history again: the second call of a
// tool loop logs the tool result alone.
func TestTraceOfAScriptedCallRecordsOnlyWhatItAdds(t *testing.T) {
	tr := scriptedTrace(t, `{"turns":[{"steps":[{"toolCall":{"id":"t1","name":"ls","arguments":{"path":"."}}}]},{"steps":[{"text":"listed"}]},{"steps":[{"text":"again"}]}]}`, "list", "more")
	var got []string
	for _, r := range tr.Records {
		if r.Type != trace.TypeCall {
			continue
		}
		var logical struct {
			MessageCount int `json:"messageCount"`
			MessagesFrom int `json:"messagesFrom"`
			Messages     []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Logical, &logical); err != nil {
			t.Fatal(err)
		}
		roles := make([]string, len(logical.Messages))
		for i, m := range logical.Messages {
			roles[i] = m.Role
		}
		got = append(got, fmt.Sprintf("%d/%d:%s", logical.MessagesFrom, logical.MessageCount, strings.Join(roles, ",")))
	}
	want := "0/1:user 2/3:toolResult 4/5:user"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("logical requests %s, want %s", g, want)
	}
}

// A session traced while traces were on keeps no trace once deleted with
// traces off: the trace goes with the session whoever deletes it.
func TestDeleteWithTracesOffRemovesTheTraceWrittenEarlier(t *testing.T) {
	root := t.TempDir()
	e := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, ""), Options{})
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, s, "one")
	id, dir := s.ID(), e.TraceDir("", s.ID())
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	if !trace.IsDir(dir) {
		t.Fatal("no trace written while traces were on")
	}
	e2 := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, `,"traces":{"enabled":false}`), Options{})
	if _, err := e2.Session(id); err != nil {
		t.Fatal(err)
	}
	if err := e2.Delete(context.Background(), "", id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the deleted session's trace is still there: %v", err)
	}
}

// A key is hidden in every form a trace line can spell it: percent-encoded
// as a base URL's query or password must write it (and as an error that
// echoes the URL repeats it), and JSON-escaped as a request body and every
// record encode a key with quotes or <, > and &.
func TestTraceHoldsNoKeyInItsEncodedForms(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // requests fail, and the error names the URL
	root := t.TempDir()
	key := `sk-<json>&"quoted"\-556677`
	env := map[string]string{"MY_KEY": key}
	base := "http://trace-user:pass%2Fword%2B4455@" + addr + "/v1?api-key=qv%2Fsecret%2B7788"
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + base + `","apiKeyEnv":"MY_KEY","titles":false,"retry":{"attempts":2,"baseDelayMs":1},"models":[{"id":"gpt-t"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
	e := traceTestEngine(t, root, cfg, Options{Getenv: func(k string) string { return env[k] }})
	ws, err := e.AddWorkspace(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.CreateSession(ws.ID, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(PromptInput{RequestID: "r1", Text: "my key is " + key}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	all := allTraceBytes(t, root)
	if !bytes.Contains(all, []byte(`"type":"error"`)) {
		t.Fatalf("no failed call recorded:\n%s", all)
	}
	for _, secret := range []string{key, "pass/word+4455", "qv/secret+7788"} {
		js, _ := json.Marshal(secret)
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), string(js[1 : len(js)-1]), strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(js[1 : len(js)-1]))} {
			if bytes.Contains(all, []byte(form)) {
				t.Errorf("the trace holds %q as %q:\n%s", secret, form, all)
			}
		}
	}
}

// scriptedTrace runs prompts through a new session of the scripted model
// answering script, shuts the engine down (the trace flushed) and reads
// the session's trace.
func scriptedTrace(t *testing.T, script string, prompts ...string) *trace.Trace {
	t.Helper()
	root := t.TempDir()
	e := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, ""), Options{})
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts {
		promptAndWait(t, s, p)
	}
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(e.TraceDir("", s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
