package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// anthropicReply is an Anthropic messages stream that answers text, with
// the input usage in message_start and the output in message_delta, as
// the API sends them.
func anthropicReply(text, inputUsage string, output int) string {
	return `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{` + inputUsage + `,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + text + `"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":` + strconv.Itoa(output) + `}}

event: message_stop
data: {"type":"message_stop"}

`
}

// waitForHeader waits until the one session's header.json holds text.
func waitForHeader(t *testing.T, data, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		paths, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*", "header.json"))
		if len(paths) == 1 {
			if b, err := os.ReadFile(paths[0]); err == nil && strings.Contains(string(b), text) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no session header ever held %q", text)
}

// TestChatShowsPromptUsageTotalsAndBudget: against the Anthropic API
// faked on 127.0.0.1, each prompt's run ends with a line of its tokens
// and cost (a retried attempt that had reported usage included), /usage
// shows the session's totals with titles and compaction apart, and
// /budget sets session/set_budget's limits, shows what they leave, and
// refuses bad values; a prompt the budget refuses reaches no server and
// shows no usage line.
func TestChatShowsPromptUsageTotalsAndBudget(t *testing.T) {
	work := t.TempDir()
	llm := filepath.Join(work, "llm")
	replies := map[string]string{
		"1.sse": anthropicReply("answer one", `"input_tokens":1000`, 200),
		"2.sse": anthropicReply("Usage ledger test", `"input_tokens":50`, 10),
		// Overloaded after it reported usage: retried, and counted.
		"3.sse": `event: message_start
data: {"type":"message_start","message":{"id":"m3","type":"message","role":"assistant","content":[],"usage":{"input_tokens":2000,"cache_read_input_tokens":500,"output_tokens":1}}}

event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`,
		"4.sse": anthropicReply("answer two", `"input_tokens":2000,"cache_read_input_tokens":500,"cache_creation_input_tokens":100`, 300),
		"5.sse": anthropicReply("SUMMARY OF THE START", `"input_tokens":3000`, 400),
	}
	if err := os.Mkdir(llm, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range replies {
		if err := os.WriteFile(filepath.Join(llm, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fake := newFakeLLM(work)
	t.Cleanup(fake.srv.Close)
	t.Setenv("LOOP_CHAT_TEST_KEY", "ak-chat-test")
	data, proj := newDataRoot(t, `{"turns":[]}`)
	cfg := `{"defaults":{"model":{"provider":"an","id":"claude-test"}},
	 "providers":{"an":{"api":"anthropic","baseUrl":"` + fake.srv.URL + `","apiKeyEnv":"LOOP_CHAT_TEST_KEY","titles":true,"retry":{"attempts":3,"baseDelayMs":5},
	  "models":[{"id":"claude-test","maxOutputTokens":4096,"cost":{"input":2,"output":10,"cacheRead":0.5,"cacheWrite":2.5}}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, data, proj)
	c.see("model an/claude-test")
	c.keys("/usage\r")
	c.see("usage: no model calls yet")
	c.see("budget: none (/budget sets one)")

	// 1000 and 200 tokens at 2 and 10 per million.
	c.keys("first question\r")
	c.see("answer one")
	c.see("(1200 tokens: input 1000, output 200; cost 0.004)")
	// The title is the second request; the next prompt waits for it.
	waitForHeader(t, data, "Usage ledger test")

	// 2000+500+1 and 2000+500+100+300 tokens: 0.00426 + 0.0075.
	c.keys("second question\r")
	c.see("answer two")
	c.see("(5401 tokens in 2 calls: input 4000, output 301, cache read 1000, cache write 100; cost 0.01176)")
	c.keys("/compact\r")
	c.see("compacted: the model now reads a summary")

	// 1200 + 60 + 2501 + 2900 + 3400 tokens; the title's 0.0002 and the
	// summary's 0.01 are in the totals and also apart.
	c.keys("/usage\r")
	c.see("usage: 10061 tokens in 5 calls, cost 0.02596")
	c.see("  input 8050, output 911, cache read 1000, cache write 100")
	c.see("  titles: 60 tokens in 1 call, cost 0.0002")
	c.see("  compaction: 3400 tokens in 1 call, cost 0.01")
	c.see("budget: none")

	c.keys("/budget sessionTokens 20000 promptCost 0.1\r")
	c.see("budget: sessionTokens 20000 (9939 left), promptCost 0.1 per prompt (the last prompt cost 0.01176)")
	c.keys("/budget promptTokens 1.5\r")
	c.see(`promptTokens takes a whole number of tokens or off, not "1.5"`)
	c.keys("/budget sessionCost -1\r")
	c.see("invalid_params: budget sessionCost -1 is not a non-negative number")
	c.keys("/budget sessionCost NaN\r")
	c.see("invalid_params: budget sessionCost NaN is not a non-negative number")
	c.keys("/budget tokens 5\r")
	c.see("no limit tokens")
	c.keys("/budget sessionTokens\r")
	c.see("usage: /budget [LIMIT VALUE|off]...")
	c.keys("/budget\r")
	c.see("budget: sessionTokens 20000 (9939 left), promptCost 0.1 per prompt")

	// A limit the next request would pass: refused before it is sent.
	c.keys("/budget sessionTokens 10100 promptCost off\r")
	c.see("budget: sessionTokens 10100 (39 left)")
	c.keys("third question\r")
	c.see("error: budget_exceeded: ")
	c.see("(sessionTokens); /budget shows the limits")
	c.keys("/usage\r")
	c.see("usage: 10061 tokens in 5 calls, cost 0.02596")
	c.see("budget: sessionTokens 10100 (39 left)")
	if _, err := os.Stat(filepath.Join(llm, "6.request.json")); !os.IsNotExist(err) {
		t.Fatalf("the refused request reached the server: %v", err)
	}
	if screen := strings.Join(c.screen(), "\n"); strings.Contains(screen, "(0 tokens") {
		t.Fatalf("a prompt that made no call showed a usage line:\n%s", screen)
	}
	c.keys("/budget sessionTokens off\r")
	c.see("budget: none (/budget sets one)")
	c.keys("\x04")
	c.exited()
}

// TestUsageReportSaysWhyCostIsUnknownAndWhatBudgetIsLeft: a ledger that
// mixes priced and unpriced calls has no cost and says how many lacked
// prices; a session limit already reached says none is left, and a cost
// limit cannot be checked without prices.
func TestUsageReportSaysWhyCostIsUnknownAndWhatBudgetIsLeft(t *testing.T) {
	st := &engine.State{
		Usage:         convo.SessionUsage{UsageSum: convo.UsageSum{Input: 90, Output: 30, TotalTokens: 120, Calls: 3, Cost: 0.5, Unpriced: 1}},
		Budget:        store.Budget{SessionTokens: store.Some(100), SessionCost: store.Some(1.0), PromptTokens: store.Some(50)},
		PromptTimings: []store.PromptTiming{{ID: "r1", Usage: convo.UsageSum{TotalTokens: 40, Calls: 1}}},
	}
	got := usageReport(st)
	for _, want := range []string{
		"usage: 120 tokens in 3 calls, cost unknown: 1 of the 3 calls had no prices in config.json (models[].cost)\n",
		"  titles: none\n",
		"budget: sessionTokens 100 (none left: 120 used), sessionCost 1 (cannot be checked: calls without prices), promptTokens 50 per prompt (the last prompt used 40)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if line := promptUsageLine(st.Usage.UsageSum); line != "  (120 tokens in 3 calls: input 90, output 30)" {
		t.Errorf("prompt line %q", line)
	}
}
