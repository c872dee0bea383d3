package engine_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// usageHarness is a harness whose model has prices (per million tokens:
// input 2, output 10, cache read 0.5, cache write 2.5) and makes titles,
// and a second model without prices.
func usageHarness(t *testing.T, defaults, script string) *harness {
	t.Helper()
	h := newHarness(t, script)
	cfg := `{"defaults":{` + defaults + `},"providers":{"fake":{"api":"scripted","script":"script.json","titles":true,"models":[
		{"id":"m1","cost":{"input":2,"output":10,"cacheRead":0.5,"cacheWrite":2.5}},{"id":"m2"}]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

const usageScript = `{"log":"requests.jsonl","turns":[
	{"match":"one","steps":[{"text":"a1"}],"usage":{"input":1000,"output":200,"totalTokens":1200}},
	{"purpose":"title","steps":[{"text":"A title"}],"usage":{"input":50,"output":10,"totalTokens":60}},
	{"match":"two","steps":[{"text":"a2"}],"usage":{"input":2000,"output":300,"cacheRead":500,"cacheWrite":100,"totalTokens":2900}},
	{"purpose":"summary","steps":[{"text":"SUMMARY"}],"usage":{"input":3000,"output":400,"totalTokens":3400}},
	{"steps":[{"text":"more"}],"usage":{"input":10,"output":1,"totalTokens":11}}]}`

// waitForTitle waits for the title a session's first run starts. The run
// starts it after it publishes agent_settled, which h.prompt waits for, so
// Wait (which returns once the run is over) comes first: WaitForTitle alone
// may return before the title work exists, and the title's request then
// reaches the model later than the test counted.
func waitForTitle(t *testing.T, s *engine.Session) {
	t.Helper()
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.WaitForTitle()
}

func wantSum(t *testing.T, what string, got, want convo.UsageSum) {
	t.Helper()
	gc, wc := got.Cost, want.Cost
	got.Cost, want.Cost = 0, 0
	if got != want || math.Abs(gc-wc) > 1e-12 {
		got.Cost, want.Cost = gc, wc
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

// TestLedgerCountsMainTitleAndCompactionCalls: every call is in the
// session's totals with its cost from the configured prices, titles and
// compaction also apart; each prompt timing carries its run's calls; the
// title's usage, which no run commits, is saved with the title, and all
// of it survives a restart and reaches the list.
func TestLedgerCountsMainTitleAndCompactionCalls(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	id := s.ID()
	h.prompt(s, "r1", "one")
	waitForTitle(t, s)
	// The title's call is saved although no run followed it.
	h.restart()
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	title := convo.UsageSum{Input: 50, Output: 10, TotalTokens: 60, Calls: 1, Cost: (50*2 + 10*10) / 1e6}
	wantSum(t, "title after restart", s.Snapshot().State.Usage.Title, title)

	h.prompt(s, "r2", "two")
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	main1 := convo.UsageSum{Input: 1000, Output: 200, TotalTokens: 1200, Calls: 1, Cost: (1000*2 + 200*10) / 1e6}
	main2 := convo.UsageSum{Input: 2000, Output: 300, CacheRead: 500, CacheWrite: 100, TotalTokens: 2900, Calls: 1, Cost: (2000*2 + 300*10 + 500*0.5 + 100*2.5) / 1e6}
	summary := convo.UsageSum{Input: 3000, Output: 400, TotalTokens: 3400, Calls: 1, Cost: (3000*2 + 400*10) / 1e6}
	var total convo.UsageSum
	for _, u := range []convo.UsageSum{main1, title, main2, summary} {
		total.Add(u)
	}
	check := func(when string, s *engine.Session) {
		t.Helper()
		st := s.Snapshot().State
		wantSum(t, when+": total", st.Usage.UsageSum, total)
		wantSum(t, when+": title", st.Usage.Title, title)
		wantSum(t, when+": compaction", st.Usage.Compaction, summary)
		if len(st.PromptTimings) != 2 {
			t.Fatalf("%s: %d timings", when, len(st.PromptTimings))
		}
		wantSum(t, when+": first timing", st.PromptTimings[0].Usage, main1)
		wantSum(t, when+": second timing", st.PromptTimings[1].Usage, main2)
	}
	check("live", s)
	h.restart()
	s, err = h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	check("after restart", s)
	list, err := h.e.List(h.ws, false)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
	wantSum(t, "list", list[0].Usage.UsageSum, total)
}

// TestSessionTokenBudgetRefusesRequestAndKeepsPrompt: a request whose
// estimate plus the answer's maximum would pass sessionTokens is not
// sent; the run settles with budget_exceeded and its prompt is saved.
func TestSessionTokenBudgetRefusesRequestAndKeepsPrompt(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	waitForTitle(t, s)
	before := len(h.requests())
	if _, err := s.SetBudget(engine.BudgetChange{SessionTokens: &engine.BudgetLimit[int]{Value: 5000}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeBudgetExceeded || !strings.Contains(got.Error.Message, "sessionTokens") {
		t.Fatalf("settled %+v", got.Error)
	}
	if n := len(h.requests()); n != before {
		t.Fatalf("%d requests reached the model after the budget refused", n-before)
	}
	h.restart()
	s, err = h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	st := s.Snapshot().State
	if last := st.Messages[len(st.Messages)-1]; last.Role != convo.RoleUser || last.Text() != "two" || st.MessageCount != len(st.Messages) {
		t.Fatalf("the refused prompt was not saved: %+v", st.Messages)
	}
	if b := st.Budget; b.SessionTokens != store.Some(5000) {
		t.Fatalf("budget after restart %+v", b)
	}
}

// TestPromptBudgetsCountTheRunOnly: promptTokens compares the run's own
// calls: a limit the session's total already passed still lets a small
// prompt through, and one below the answer's maximum refuses it.
func TestPromptBudgetsCountTheRunOnly(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	waitForTitle(t, s)
	// The model's answer may be 16384 tokens: a prompt limit above the
	// request's bound plus that lets it through, whatever the session
	// used before.
	if _, err := s.SetBudget(engine.BudgetChange{PromptTokens: &engine.BudgetLimit[int]{Value: 10_000_000}}); err != nil {
		t.Fatal(err)
	}
	h.prompt(s, "r2", "two")
	if _, err := s.SetBudget(engine.BudgetChange{PromptTokens: &engine.BudgetLimit[int]{Value: 16000}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r3", Text: "three"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeBudgetExceeded || !strings.Contains(got.Error.Message, "promptTokens") {
		t.Fatalf("settled %+v", got.Error)
	}
}

// TestCostBudgets: sessionCost compares the session's cost plus the
// request's at the model's prices; a model without prices cannot be
// checked against a cost budget, so the request is refused, not sent.
func TestCostBudgets(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	waitForTitle(t, s)
	before := len(h.requests())
	// The session has spent 0.0042; the next request could cost 16384
	// output tokens at 10 per million alone.
	if _, err := s.SetBudget(engine.BudgetChange{SessionCost: &engine.BudgetLimit[float64]{Value: 0.1}}); err != nil {
		t.Fatal(err)
	}
	res, _ := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "two"})
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeBudgetExceeded || !strings.Contains(got.Error.Message, "sessionCost") {
		t.Fatalf("sessionCost: settled %+v", got.Error)
	}
	if _, err := s.SetBudget(engine.BudgetChange{SessionCost: &engine.BudgetLimit[float64]{Clear: true}, PromptCost: &engine.BudgetLimit[float64]{Value: 100}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m2"}, nil); err != nil {
		t.Fatal(err)
	}
	res, _ = s.Resume()
	if got := h.settled(res.RunID); got.Error == nil || got.Error.Code != engine.CodeBudgetExceeded || !strings.Contains(got.Error.Message, "no prices") {
		t.Fatalf("unpriced model: settled %+v", got.Error)
	}
	if n := len(h.requests()); n != before {
		t.Fatalf("%d requests reached the model after the budgets refused", n-before)
	}
	// Without the cost budget the unpriced model answers, and the
	// session's cost becomes unknown.
	if _, err := s.SetBudget(engine.BudgetChange{PromptCost: &engine.BudgetLimit[float64]{Clear: true}}); err != nil {
		t.Fatal(err)
	}
	res, _ = s.Resume()
	if got := h.settled(res.RunID); got.Error != nil {
		t.Fatalf("resume: %+v", got.Error)
	}
	if u := s.Snapshot().State.Usage; u.CostKnown() || u.Unpriced != 1 {
		t.Fatalf("a session with an unpriced call has a known cost: %+v", u)
	}
}

// TestSetBudgetRefusesNegativeLimitsAndClears: negative limits are
// invalid_params and change nothing; nil keeps a limit, Clear drops it.
func TestSetBudgetRefusesNegativeLimitsAndClears(t *testing.T) {
	h := usageHarness(t, `"budget":{"sessionTokens":900000,"promptCost":2}`, usageScript)
	s := h.newSession()
	if b := s.Snapshot().State.Budget; b.SessionTokens != store.Some(900000) || b.PromptCost != store.Some(2.0) {
		t.Fatalf("defaults.budget not applied to a new session: %+v", b)
	}
	if _, err := s.SetBudget(engine.BudgetChange{PromptTokens: &engine.BudgetLimit[int]{Value: -1}}); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("negative limit: %v", err)
	}
	snap, err := s.SetBudget(engine.BudgetChange{PromptCost: &engine.BudgetLimit[float64]{Clear: true}, PromptTokens: &engine.BudgetLimit[int]{Value: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if b := snap.State.Budget; b != (store.Budget{SessionTokens: store.Some(900000), PromptTokens: store.Some(0)}) {
		t.Fatalf("budget %+v", b)
	}
}

// TestBadPricesOrBudgetInConfigAreConfigErrors: negative prices and
// budgets make config.json unusable, as other bad values do.
func TestBadPricesOrBudgetInConfigAreConfigErrors(t *testing.T) {
	for _, cfg := range []string{
		`{"providers":{"p":{"api":"openai","models":[{"id":"m","cost":{"input":-1,"output":1}}]}}}`,
		`{"providers":{"p":{"api":"openai","models":[{"id":"m","cost":{"input":"cheap"}}]}}}`,
		`{"defaults":{"budget":{"sessionCost":-0.5}}}`,
		`{"defaults":{"budget":{"promptTokens":1.5}}}`,
	} {
		if _, err := engine.ParseConfig([]byte(cfg)); err == nil {
			t.Errorf("%s parsed", cfg)
		}
	}
}

// TestOldSessionUsageComesFromItsMessages: a session saved before the
// ledger (no usage in its header) opens with totals computed from its
// assistant messages, priced with today's config, and saves them with
// its next write.
func TestOldSessionUsageComesFromItsMessages(t *testing.T) {
	h := usageHarness(t, "", usageScript)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	waitForTitle(t, s)
	id := s.ID()
	h.restart()
	// Take the ledger out of the header, as an older Loop wrote it.
	st, err := h.e.Root().Open(h.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMeta(func(hd *store.Header) { hd.Usage = convo.SessionUsage{} }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s, err = h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	want := convo.UsageSum{Input: 1000, Output: 200, TotalTokens: 1200, Calls: 1, Cost: (1000*2 + 200*10) / 1e6}
	wantSum(t, "computed", s.Snapshot().State.Usage.UsageSum, want)
	if _, err := s.SetBudget(engine.BudgetChange{}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	list, err := h.e.List(h.ws, false)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
	wantSum(t, "saved", list[0].Usage.UsageSum, want)
}

// TestNegativeOrHugeUsageFromAProviderNeverBlocksCommits: a provider that
// reports negative token counts, or counts whose sum (and cost) would
// overflow, still has its answers saved: the ledger counts a negative
// figure as 0 and saturates instead of wrapping, so no header it writes
// is refused.
func TestNegativeOrHugeUsageFromAProviderNeverBlocksCommits(t *testing.T) {
	h := usageHarness(t, "", `{"turns":[
		{"match":"one","steps":[{"text":"a1"}],"usage":{"input":-1000,"output":-5,"totalTokens":-1005}},
		{"match":"two","steps":[{"text":"a2"}],"usage":{"input":9223372036854775807,"output":9223372036854775807,"totalTokens":9223372036854775807}},
		{"match":"three","steps":[{"text":"a3"}],"usage":{"input":9223372036854775807,"output":9223372036854775807,"totalTokens":9223372036854775807}}]}`)
	s := h.newSession()
	id := s.ID()
	for i, text := range []string{"one", "two", "three"} {
		h.prompt(s, "r"+text, text)
		if le := s.Snapshot().State.LastError; le != nil {
			t.Fatalf("prompt %d: %+v", i+1, le)
		}
	}
	h.restart()
	s, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Snapshot().State
	if len(st.Messages) != 6 || len(st.PromptTimings) != 3 {
		t.Fatalf("after restart: %d messages, %d timings; want 6 and 3", len(st.Messages), len(st.PromptTimings))
	}
	u := st.Usage.UsageSum
	if u.Input != math.MaxInt || u.Calls != 3 || u.Cost < 0 || math.IsInf(u.Cost, 0) || math.IsNaN(u.Cost) {
		t.Fatalf("usage after restart: %+v", u)
	}
	if t0 := st.PromptTimings[0].Usage; t0.Input != 0 || t0.Output != 0 || t0.TotalTokens != 0 || t0.Calls != 1 {
		t.Fatalf("the first prompt's negative usage: %+v, want zeros and one call", t0)
	}
}
