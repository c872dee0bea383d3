package store

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// TestUsageAndBudgetPersistInHeaderAndList: the usage ledger and the
// budgets a commit's edit sets are in header.json (fixed-size members,
// before the committed range), survive reopening, and List reads the
// totals from the header alone; a timing's usage is in timings.jsonl.
func TestUsageAndBudgetPersistInHeaderAndList(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	usage := convo.SessionUsage{
		UsageSum: convo.UsageSum{Input: 300, Output: 60, CacheRead: 10, TotalTokens: 370, Calls: 3, Cost: 0.25},
		Title:    convo.UsageSum{Input: 50, Output: 10, TotalTokens: 60, Calls: 1, Cost: 0.05},
	}
	budget := Budget{SessionTokens: Some(10000), PromptCost: Some(0.5)}
	timing := PromptTiming{ID: "run-1", StartedAt: 1, FinishedAt: Some(int64(2)), Usage: convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2, Unpriced: 2}}
	mustCommit(t, s, prompt(0), nil, func(h *Header) {
		h.Usage = usage
		h.Budget = budget
	}, TimingAt{Index: 0, Timing: timing})

	hdr, err := os.ReadFile(filepath.Join(s.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hdr), `"usage":{"input":300,"output":60,"cacheRead":10,"cacheWrite":0,"totalTokens":370,"calls":3,"cost":0.25,"title":{`) ||
		!strings.Contains(string(hdr), `"budget":{"sessionTokens":10000,"promptCost":0.5}`) {
		t.Fatalf("header.json lacks the ledger or the budget:\n%s", hdr)
	}
	if strings.Contains(string(hdr), `"compaction":{"input"`) {
		t.Fatalf("a purpose without calls is written:\n%s", hdr)
	}
	tm, err := os.ReadFile(filepath.Join(s.Dir(), timingsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tm), `"usage":{"input":250,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":300,"calls":2,"unpriced":2}`) {
		t.Fatalf("timings.jsonl lacks the timing's usage:\n%s", tm)
	}

	o := reopen(t, r, s)
	if h := o.Header(); h.Usage != usage || h.Budget != budget {
		t.Fatalf("reopened: usage %+v budget %+v", h.Usage, h.Budget)
	}
	if ts := o.Timings(); len(ts) != 1 || ts[0] != timing {
		t.Fatalf("reopened timings %+v", ts)
	}
	sums, err := r.List("", ListOptions{})
	if err != nil || len(sums) != 1 || sums[0].Usage != usage {
		t.Fatalf("List = %+v, %v", sums, err)
	}
}

// TestHeaderWithNegativeUsageIsMalformed: a ledger that went negative
// (a corrupt header) is refused like any broken header field.
func TestHeaderWithNegativeUsageIsMalformed(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, prompt(0), nil, func(h *Header) { h.Usage.Calls = 1 })
	dir := s.Dir()
	s.Close()
	path := filepath.Join(dir, headerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"calls":1`, `"calls":-1`, 1))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenDir(dir); !errors.Is(err, ErrMalformed) {
		t.Fatalf("open = %v, want ErrMalformed", err)
	}
}

// TestBudgetValidateRefusesNegativeLimits: limits are non-negative
// numbers; zero is a limit (it refuses every request).
func TestBudgetValidateRefusesNegativeLimits(t *testing.T) {
	for _, b := range []Budget{{SessionTokens: Some(-1)}, {PromptTokens: Some(-5)}, {SessionCost: Some(-0.01)}, {PromptCost: Some(-1.0)}} {
		if b.Validate() == nil {
			t.Errorf("%+v validated", b)
		}
	}
	if b := (Budget{SessionTokens: Some(0), PromptCost: Some(0.0)}); b.Validate() != nil {
		t.Errorf("zero limits refused: %v", b.Validate())
	}
}

// TestUsageSumAddSaturatesAndIgnoresNegatives: a total never wraps,
// becomes infinite or goes down, so a header holding it stays valid.
func TestUsageSumAddSaturatesAndIgnoresNegatives(t *testing.T) {
	u := convo.UsageSum{Input: math.MaxInt - 1, Calls: 1, Cost: math.MaxFloat64 / 2}
	u.Add(convo.UsageSum{Input: 5, Output: -3, Calls: 1, Cost: math.MaxFloat64})
	u.Add(convo.UsageSum{Cost: -1, TotalTokens: -7})
	u.Add(convo.UsageSum{Cost: math.NaN()})
	want := convo.UsageSum{Input: math.MaxInt, Calls: 2, Cost: math.MaxFloat64}
	if u != want {
		t.Fatalf("sum %+v, want %+v", u, want)
	}
	if err := u.Validate(); err != nil {
		t.Fatalf("a saturated sum is invalid: %v", err)
	}
}
