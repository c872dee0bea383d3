package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
	"github.com/tiktoken-go/tokenizer"
)

// The scripted session of docs/performance.md ("Tokens a session
// sends"): ten prompts, about thirty model requests, tool calls that read
// a 134-line file, run bash with a 21 KB output and edit a file, driven
// through each provider kind against a recording fake server that speaks
// the real wire format. TestEveryRequestExtendsThePreviousOne checks the
// prefix property on it; BenchmarkTokensOfAScriptedSession reports what
// the requests cost.

// sessionStep is one reply of the fake model: a tool call, or (tool "")
// the turn's final text.
type sessionStep struct {
	tool, args, text string
}

type sessionPrompt struct {
	text  string
	steps []sessionStep
}

func call(tool string, args any) sessionStep {
	b, _ := json.Marshal(args)
	return sessionStep{tool: tool, args: string(b)}
}

func answer(text string) sessionStep {
	return sessionStep{text: text + " " + strings.Repeat("The change keeps the public behaviour and the tests as they were. ", 3)}
}

func scriptedPrompts() []sessionPrompt {
	return []sessionPrompt{
		{"What does main.go do?", []sessionStep{call("read", map[string]any{"path": "main.go"}), answer("main.go defines a small HTTP service with handlers and a config loader.")}},
		{"Run the build and tell me what fails.", []sessionStep{call("bash", map[string]any{"command": "cat build.log"}), answer("Two tests fail: TestHandler11 and TestHandler41, both on a timeout.")}},
		{"Fix the off-by-one in handle7.", []sessionStep{
			call("read", map[string]any{"path": "main.go", "offset": 40, "limit": 20}),
			call("edit", map[string]any{"path": "main.go", "oldText": "\tfor i := 0; i <= n7; i++ {", "newText": "\tfor i := 0; i < n7; i++ {"}),
			call("bash", map[string]any{"command": "grep -c 'i < n7' main.go"}),
			answer("Fixed: the loop in handle7 now stops before n7."),
		}},
		{"Show me the config loader.", []sessionStep{call("read", map[string]any{"path": "main.go", "offset": 100, "limit": 35}), answer("loadConfig reads the file, then applies the defaults.")}},
		{"Rename the flag addr to listen.", []sessionStep{
			call("grep", map[string]any{"pattern": "addr", "path": "main.go"}),
			call("edit", map[string]any{"path": "main.go", "oldText": `	addr = flag.String("addr", ":8080", "listen address")`, "newText": `	addr = flag.String("listen", ":8080", "listen address")`}),
			call("bash", map[string]any{"command": "grep -n listen main.go"}),
			answer("Renamed the flag; the variable keeps its name."),
		}},
		{"Run the tests again.", []sessionStep{call("bash", map[string]any{"command": "cat build.log"}), call("read", map[string]any{"path": "main.go", "offset": 60, "limit": 20}), answer("Same two failures; they are unrelated to the rename.")}},
		{"Why does handle11 time out?", []sessionStep{call("read", map[string]any{"path": "main.go"}), call("grep", map[string]any{"pattern": "timeout", "path": "."}), answer("handle11 waits on a channel nobody closes.")}},
		{"Add a comment above handle11.", []sessionStep{
			call("edit", map[string]any{"path": "main.go", "oldText": "func handle11(ctx context.Context, n11 int) error {", "newText": "// handle11 waits for the worker; see TestHandler11.\nfunc handle11(ctx context.Context, n11 int) error {"}),
			call("bash", map[string]any{"command": "head -c 300 main.go"}),
			call("read", map[string]any{"path": "main.go", "offset": 80, "limit": 15}),
			answer("Added the comment."),
		}},
		{"Summarize what changed.", []sessionStep{call("bash", map[string]any{"command": "grep -n 'handle7\\|listen' main.go"}), call("bash", map[string]any{"command": "wc -l main.go"}), answer("Three changes: the loop bound, the flag name and a comment.")}},
		{"Anything else to look at?", []sessionStep{call("ls", map[string]any{"path": "."}), answer("Only build.log and main.go are here; nothing else stands out.")}},
	}
}

// mainGo is a 134-line Go file.
func mainGo() string {
	var b strings.Builder
	b.WriteString("// Command service answers requests with the handlers below.\n//\n// Each handler loops over its steps and stops when the\n// context ends.\npackage main\n\nimport (\n\t\"context\"\n\t\"flag\"\n\t\"fmt\"\n\t\"os\"\n)\n\n")
	b.WriteString("var (\n\taddr = flag.String(\"addr\", \":8080\", \"listen address\")\n\tverbose = flag.Bool(\"v\", false, \"log every request\")\n)\n\n")
	for i := 1; i <= 13; i++ {
		fmt.Fprintf(&b, "func handle%d(ctx context.Context, n%d int) error {\n\tfor i := 0; i <= n%d; i++ {\n\t\tif err := ctx.Err(); err != nil {\n\t\t\treturn fmt.Errorf(\"handle%d: step %%d: %%w\", i, err)\n\t\t}\n\t}\n}\n\n", i, i, i, i)
	}
	b.WriteString("func loadConfig(path string) (map[string]string, error) {\n\tdata, err := os.ReadFile(path)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn map[string]string{\"raw\": string(data)}, nil\n}\n\n")
	b.WriteString("func main() {\n\tflag.Parse()\n\tfmt.Println(*addr, *verbose)\n}\n")
	return b.String()
}

// buildLog is about 21 KB of test output.
func buildLog() string {
	var b strings.Builder
	for i := 0; b.Len() < 21000; i++ {
		fmt.Fprintf(&b, "=== RUN   TestHandler%d\n", i)
		switch i {
		case 11, 41:
			fmt.Fprintf(&b, "    main_test.go:%d: handle%d: context deadline exceeded\n--- FAIL: TestHandler%d (5.00s)\n", 20+i, i, i)
		default:
			fmt.Fprintf(&b, "--- PASS: TestHandler%d (0.%02ds)\n", i, i%97)
		}
	}
	b.WriteString("FAIL\nFAIL\texample.com/service\t12.345s\n")
	return b.String()
}

// summaryMarker is in every compaction summary request, and in no other.
const summaryMarker = "context summarization checkpoint"

// fakeSummary is the summary the fake model writes: about 500 tokens.
var fakeSummary = "## Goal\nFix the failing handlers of the service in main.go.\n\n## Progress\n" + strings.Repeat("- Read main.go and build.log; fixed the loop bound of handle7, renamed the addr flag, commented handle11.\n", 20)

// tokenRun is one scripted session through one provider kind.
type tokenRun struct {
	kind     string
	requests []providertest.Request
	summary  []bool // requests[i] asked for a summary
	usage    convo.SessionUsage
	// reportedCached is the sum of the cached input tokens the fake
	// reported, which usage must count as cacheRead.
	reportedCached int
}

// sessionOptions vary a scripted session: the model's window, the prompt
// before which the engine is shut down and a new one continues (0: none),
// config.json's toolOutput.maxBytes (0: the default).
type sessionOptions struct {
	window, restartAt, toolOutputMax int
	// presetAt > 0 switches the permission preset to full-access before
	// that prompt.
	presetAt int
}

// runScriptedSession drives the scripted session through a fake server
// of kind.
func runScriptedSession(tb testing.TB, kind string, o sessionOptions) *tokenRun {
	tb.Helper()
	var steps []sessionStep
	prompts := scriptedPrompts()
	for _, p := range prompts {
		steps = append(steps, p.steps...)
	}
	var mu sync.Mutex
	next, cachedSum := 0, 0
	var prevBody []byte
	srv := providertest.NewFuncServer(tb, kind, func(r providertest.Request) providertest.Response {
		mu.Lock()
		defer mu.Unlock()
		// The fake reports as cached a quarter of the bytes this request
		// shares with the one before.
		shared := 0
		for shared < len(prevBody) && shared < len(r.Body) && prevBody[shared] == r.Body[shared] {
			shared++
		}
		cached := shared / 4
		prevBody = r.Body
		if bytes.Contains(r.Body, []byte(summaryMarker)) {
			cachedSum += cached
			return providertest.SSE(fakeReply(kind, sessionStep{text: fakeSummary}, "", len(r.Body), cached))
		}
		if next >= len(steps) {
			return providertest.Response{Status: 500, Body: `{"error":{"message":"the script has no more steps"}}`}
		}
		next++
		cachedSum += cached
		return providertest.SSE(fakeReply(kind, steps[next-1], fmt.Sprintf("call_%d", next), len(r.Body), cached))
	})
	root, work := tb.TempDir(), tb.TempDir()
	base := srv.URL
	if kind == provider.APIOpenAI {
		base += "/v1"
	}
	cfg := fmt.Sprintf(`{"providers":{"fake":{"api":%q,"baseUrl":%q,"titles":false,"retry":{"attempts":1},`+
		`"models":[{"id":"m","contextWindow":%d,"maxOutputTokens":4096}]}},`+
		`"toolOutput":{"maxBytes":%d},`+
		`"defaults":{"model":{"provider":"fake","id":"m"},"permission":"workspace-write"}}`, kind, base, o.window, o.toolOutputMax)
	for name, data := range map[string]string{filepath.Join(root, "config.json"): cfg, filepath.Join(work, "main.go"): mainGo(), filepath.Join(work, "build.log"): buildLog()} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	open := func() *engine.Engine {
		e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }})
		if err != nil {
			tb.Fatal(err)
		}
		if err := e.ConfigError(); err != nil {
			tb.Fatal(err)
		}
		return e
	}
	e := open()
	ws, err := e.AddWorkspace(work, "work")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := e.NewSession(ws.ID)
	if err != nil {
		tb.Fatal(err)
	}
	for i, p := range prompts {
		if i == o.restartAt && o.restartAt > 0 {
			if err := e.Shutdown(context.Background(), engine.Drain); err != nil {
				tb.Fatal(err)
			}
			e = open()
			if s, err = e.Session(s.ID()); err != nil {
				tb.Fatal(err)
			}
		}
		if i == o.presetAt && o.presetAt > 0 {
			if _, err := s.SetPermission("full-access"); err != nil {
				tb.Fatal(err)
			}
		}
		if _, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprintf("p%d", i), Text: p.text}); err != nil {
			tb.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			tb.Fatal(err)
		}
		if le := s.Snapshot().State.LastError; le != nil {
			tb.Fatalf("prompt %d: %+v", i, le)
		}
	}
	snap := s.Snapshot()
	for _, m := range snap.State.Messages {
		if m.Role == convo.RoleToolResult && m.IsError {
			tb.Fatalf("the %s call %s failed: %s", m.ToolName, m.ToolCallID, m.Text())
		}
	}
	run := &tokenRun{kind: kind, requests: srv.Requests(), usage: snap.State.Usage, reportedCached: cachedSum}
	if err := e.Shutdown(context.Background(), engine.Drain); err != nil {
		tb.Fatal(err)
	}
	if next != len(steps) {
		tb.Fatalf("%d of the script's %d steps were asked for", next, len(steps))
	}
	for _, r := range run.requests {
		run.summary = append(run.summary, bytes.Contains(r.Body, []byte(summaryMarker)))
	}
	return run
}

// fakeReply is the stream of one step, reporting as usage the request's
// size in tokens (about a quarter of its bytes), cached of them cached.
func fakeReply(kind string, st sessionStep, id string, bodyBytes, cached int) string {
	var body string
	switch {
	case kind == provider.APIOpenAI && st.tool != "":
		body = providertest.OpenAIToolCall(id, st.tool, st.args)
	case kind == provider.APIOpenAI:
		body = providertest.OpenAIText(st.text)
	case st.tool != "":
		body = providertest.AnthropicToolCall(id, st.tool, st.args)
	default:
		body = providertest.AnthropicText(st.text)
	}
	in := bodyBytes / 4
	body = strings.Replace(body, `"prompt_tokens":12,`, fmt.Sprintf(`"prompt_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},`, in, cached), 1)
	// Anthropic's input_tokens leaves the cached ones out.
	return strings.Replace(body, `"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,`,
		fmt.Sprintf(`"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,`, in-cached, cached), 1)
}

// segment is one cacheable piece of a request as the model reads it, in
// the order the provider caches prefixes: a tool, the system prompt, a
// message (OpenAI) or a content block with its role (Anthropic).
type segment struct {
	raw        string // its JSON, cache_control left out
	text       string // the strings it holds: what is counted
	breakpoint bool   // it carries an Anthropic cache_control
}

func requestSegments(tb testing.TB, kind string, body []byte) []segment {
	tb.Helper()
	var req struct {
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		tb.Fatalf("request body: %v", err)
	}
	var out []segment
	add := func(prefix string, raw json.RawMessage) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			tb.Fatal(err)
		}
		bp := false
		if m, ok := v.(map[string]any); ok {
			_, bp = m["cache_control"]
			delete(m, "cache_control")
		}
		clean, _ := json.Marshal(v)
		var text strings.Builder
		text.WriteString(prefix)
		collectStrings(&text, v)
		out = append(out, segment{raw: prefix + string(clean), text: text.String(), breakpoint: bp})
	}
	for _, t := range req.Tools {
		add("", t)
	}
	if kind == provider.APIOpenAI {
		var msgs []json.RawMessage
		var whole struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &whole)
		msgs = whole.Messages
		for _, m := range msgs {
			add("", m)
		}
		return out
	}
	var system []json.RawMessage
	if len(req.System) > 0 {
		if err := json.Unmarshal(req.System, &system); err != nil {
			tb.Fatal(err)
		}
	}
	for _, s := range system {
		add("system:", s)
	}
	for _, m := range req.Messages {
		var blocks []json.RawMessage
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			tb.Fatal(err)
		}
		for _, b := range blocks {
			add(m.Role+":", b)
		}
	}
	return out
}

func collectStrings(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			collectStrings(b, e)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			collectStrings(b, v[k])
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// sharedPrefix is how many leading segments of cur equal prev's.
func sharedPrefix(prev, cur []segment) int {
	n := 0
	for n < len(prev) && n < len(cur) && prev[n].raw == cur[n].raw {
		n++
	}
	return n
}

// cachedPrefix is how many leading segments of cur the provider's cache
// holds after prev: any shared prefix for OpenAI; for Anthropic, only a
// prefix ending at one of prev's breakpoints (where prev wrote the cache),
// read through one of cur's breakpoints at most 20 blocks after it.
func cachedPrefix(kind string, prev, cur []segment) int {
	n := sharedPrefix(prev, cur)
	if kind == provider.APIOpenAI {
		return n
	}
	for j := n; j > 0; j-- {
		if !prev[j-1].breakpoint {
			continue
		}
		for c := j - 1; c < len(cur) && c < j-1+20; c++ {
			if cur[c].breakpoint {
				return j
			}
		}
	}
	return 0
}

// tokenFigures is what BenchmarkTokensOfAScriptedSession reports.
type tokenFigures struct {
	requests, summaries int
	input, uncached     int
	summaryShare        float64 // the last summary request's cached share
}

func measureRun(tb testing.TB, run *tokenRun) tokenFigures {
	tb.Helper()
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		tb.Fatal(err)
	}
	count := func(segs []segment) int {
		n := 0
		for _, s := range segs {
			c, _ := enc.Count(s.text)
			n += c
		}
		return n
	}
	var f tokenFigures
	var prev []segment
	for i, r := range run.requests {
		segs := requestSegments(tb, run.kind, r.Body)
		total := count(segs)
		covered := count(segs[:cachedPrefix(run.kind, prev, segs)])
		f.requests++
		f.input += total
		f.uncached += total - covered
		if run.summary[i] {
			f.summaries++
			f.summaryShare = float64(covered) / float64(total)
		}
		prev = segs
	}
	return f
}

// Every request of the scripted session extends the one before it byte
// for byte (tools, system prompt, messages; Anthropic's cache_control
// marks aside), on both provider kinds and across a restart of the
// process, except the request right after a compaction.
func TestEveryRequestExtendsThePreviousOne(t *testing.T) {
	for _, kind := range []string{provider.APIOpenAI, provider.APIAnthropic} {
		t.Run(kind, func(t *testing.T) {
			run := runScriptedSession(t, kind, sessionOptions{window: 200000, restartAt: 5})
			checkPrefixes(t, run)
			if run.usage.CacheRead != run.reportedCached || run.reportedCached == 0 {
				t.Errorf("usage counts %d tokens read from the cache; the provider reported %d", run.usage.CacheRead, run.reportedCached)
			}
		})
	}
}

func checkPrefixes(t *testing.T, run *tokenRun) {
	t.Helper()
	var prev []segment
	prevSystem, prevKey := "", ""
	compacted := false
	for i, r := range run.requests {
		if run.summary[i] {
			compacted = true
			continue
		}
		segs := requestSegments(t, run.kind, r.Body)
		var top map[string]json.RawMessage
		_ = json.Unmarshal(r.Body, &top)
		system := string(top["system"])
		if run.kind == provider.APIOpenAI && (len(top["prompt_cache_key"]) < 3 || prev != nil && string(top["prompt_cache_key"]) != prevKey) {
			t.Errorf("request %d: prompt_cache_key %s, the one before %s", i, top["prompt_cache_key"], prevKey)
		}
		prevKey = string(top["prompt_cache_key"])
		if prev != nil && !compacted {
			if n := sharedPrefix(prev, segs); n != len(prev) {
				t.Errorf("request %d does not extend request %d: segment %d differs:\n was %.300s\n now %.300s", i, i-1, n, prev[n].raw, at(segs, n))
			}
			if run.kind == provider.APIAnthropic && system != prevSystem {
				t.Errorf("request %d changes the system prompt", i)
			}
		}
		prev, prevSystem, compacted = segs, system, false
	}
}

func at(segs []segment, i int) string {
	if i < len(segs) {
		return segs[i].raw
	}
	return "(nothing)"
}

// BenchmarkTokensOfAScriptedSession reports, per provider kind, the input
// tokens of all requests of the scripted session (o200k), the tokens not
// covered by the previous request's cached prefix (also with the
// permission preset changed halfway), the number of compactions at a 16k
// window, and, from the same session at 16k with tool
// output sent whole (toolOutput.maxBytes -1, so that it compacts), the
// compactions and the last summary request's cached share
// (docs/performance.md, "Tokens a session sends"). Run it with
// `go test -run '^$' -bench TokensOfAScriptedSession -benchtime 1x ./engine/`.
func BenchmarkTokensOfAScriptedSession(b *testing.B) {
	for _, kind := range []string{provider.APIOpenAI, provider.APIAnthropic} {
		b.Run(kind, func(b *testing.B) {
			var wide, narrow, whole, preset tokenFigures
			for range b.N {
				wide = measureRun(b, runScriptedSession(b, kind, sessionOptions{window: 200000}))
				preset = measureRun(b, runScriptedSession(b, kind, sessionOptions{window: 200000, presetAt: 5}))
				narrow = measureRun(b, runScriptedSession(b, kind, sessionOptions{window: 16000}))
				whole = measureRun(b, runScriptedSession(b, kind, sessionOptions{window: 16000, toolOutputMax: -1}))
			}
			b.ReportMetric(float64(wide.requests), "requests")
			b.ReportMetric(float64(wide.input), "input-tokens")
			b.ReportMetric(float64(wide.uncached), "uncached-tokens")
			b.ReportMetric(float64(preset.uncached), "uncached-tokens-preset-change")
			b.ReportMetric(float64(narrow.summaries), "compactions-16k")
			b.ReportMetric(float64(whole.summaries), "compactions-16k-whole")
			b.ReportMetric(float64(whole.input), "input-tokens-16k-whole")
			b.ReportMetric(float64(whole.uncached), "uncached-tokens-16k-whole")
			b.ReportMetric(100*whole.summaryShare, "summary-cached-%")
		})
	}
}

// A compaction's summary request is the request the session was about to
// send, cut to fit, plus the instruction: the same tools and system prompt,
// and at least 90% of it the previous request's prefix, which the
// provider has cached. No request of the session, summary requests
// included, has more input than the window less the reserve, and a
// summary request's input and maximum output fit in the window.
func TestSummaryRequestReadsTheCachedPrefixAndNoRequestExceedsTheWindow(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{provider.APIOpenAI, provider.APIAnthropic} {
		for _, o := range []sessionOptions{{window: 16000, toolOutputMax: -1}, {window: 8000}} {
			t.Run(fmt.Sprintf("%s/%d", kind, o.window), func(t *testing.T) {
				run := runScriptedSession(t, kind, o)
				f := measureRun(t, run)
				if f.summaries == 0 || f.summaryShare < 0.9 {
					t.Fatalf("%d summary requests, the last %.1f%% cached", f.summaries, 100*f.summaryShare)
				}
				var prev []segment
				for i, r := range run.requests {
					segs := requestSegments(t, kind, r.Body)
					if run.summary[i] {
						if n := sharedPrefix(prev, segs); n < len(segs)-2 {
							t.Errorf("summary request %d shares %d of its %d segments with the request before", i, n, len(segs))
						}
					}
					n := 0
					for _, s := range segs {
						c, _ := enc.Count(s.text)
						n += c
					}
					var limits struct {
						MaxTokens           int `json:"max_tokens"`
						MaxCompletionTokens int `json:"max_completion_tokens"`
					}
					r.Decode(t, &limits)
					// Loop's rule (docs/configuration.md, "Compaction"): the input
					// leaves the reserve free; a summary's answer fits in it.
					reserve := min(16384, o.window/4, 4096)
					if n > o.window-reserve {
						t.Errorf("request %d: %d tokens in, over the window of %d less the reserve of %d", i, n, o.window, reserve)
					}
					if out := max(limits.MaxTokens, limits.MaxCompletionTokens); run.summary[i] && n+out > o.window {
						t.Errorf("summary request %d: %d tokens in and %d out exceed the window of %d", i, n, out, o.window)
					}
					prev = segs
				}
			})
		}
	}
}
