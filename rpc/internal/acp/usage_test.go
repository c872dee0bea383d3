package acp_test

import (
	"math"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestUsageUpdateCarriesCostAndPromptResponseItsUsage: with prices in
// config.json, usage_update carries the session's cumulative cost (ACP's
// Cost), and the prompt response the prompt's token usage; a session
// loaded again replays the cost.
func TestUsageUpdateCarriesCostAndPromptResponseItsUsage(t *testing.T) {
	h := newHarnessWith(t, `{"providers":{"fake":{"api":"scripted","script":"script.json",
 "models":[{"id":"m1","contextWindow":100000,"cost":{"input":1,"output":2,"cacheRead":0.5,"cacheWrite":0}}]}}}`, `{"turns":[
 {"match":"one","steps":[{"text":"first"}],"usage":{"input":1000,"output":500,"cacheRead":200,"totalTokens":1700}},
 {"match":"two","steps":[{"text":"second"}],"usage":{"input":3000,"output":1000,"totalTokens":4000}}
]}`)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)

	res, err := c.prompt(ns.SessionId, "one")
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Usage; u == nil || u.InputTokens != 1000 || u.OutputTokens != 500 || u.TotalTokens != 1700 ||
		u.CachedReadTokens == nil || *u.CachedReadTokens != 200 {
		t.Fatalf("prompt response usage %s", dump(res.Usage))
	}
	// (1000*1 + 500*2 + 200*0.5) / 1e6
	lastCost(t, c.frames.updates(sid), 0.0021)

	res, err = c.prompt(ns.SessionId, "two")
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Usage; u == nil || u.InputTokens != 3000 || u.TotalTokens != 4000 {
		t.Fatalf("second prompt response usage %s", dump(res.Usage))
	}
	lastCost(t, c.frames.updates(sid), 0.0021+0.005)

	h.restart()
	c2 := h.connect()
	c2.initialize()
	if _, err := c2.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	lastCost(t, c2.frames.updates(sid), 0.0071)
}

// lastCost checks the cost of the last usage_update.
func lastCost(t *testing.T, updates []map[string]any, want float64) {
	t.Helper()
	var last map[string]any
	for _, u := range updates {
		if u["sessionUpdate"] == "usage_update" {
			last = u
		}
	}
	cost, _ := last["cost"].(map[string]any)
	amount, _ := cost["amount"].(float64)
	if cost == nil || cost["currency"] != "USD" || math.Abs(amount-want) > 1e-12 {
		t.Fatalf("last usage_update %s, want cost %v USD", dump(last), want)
	}
}

// TestUsageUpdateWithoutPricesHasNoCost: a model without prices has no
// cost to report, so usage_update leaves it out rather than say 0.
func TestUsageUpdateWithoutPricesHasNoCost(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"one","steps":[{"text":"first"}],"usage":{"input":10,"output":5}}]}`)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	c.mustPrompt(ns.SessionId, "one")
	seen := false
	for _, u := range c.frames.updates(string(ns.SessionId)) {
		if u["sessionUpdate"] == "usage_update" {
			seen = true
			if _, ok := u["cost"]; ok {
				t.Fatalf("usage_update without prices has a cost: %s", dump(u))
			}
		}
	}
	if !seen {
		t.Fatal("no usage_update")
	}
}
