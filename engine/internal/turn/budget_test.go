package turn

import (
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// TestBudgetCountsExactlyOnlyWhenTheBoundWouldExceedALimit: a request is
// checked by its bound first, like the context budget, and by its exact
// count only when the bound would exceed a limit, which then decides.
func TestBudgetCountsExactlyOnlyWhenTheBoundWouldExceedALimit(t *testing.T) {
	spend := Spend{
		Budget: store.Budget{SessionTokens: store.Some(1000)},
		Model:  "fake/m1",
		Total:  convo.UsageSum{TotalTokens: 400},
	}
	counted := false
	need := func(bound, exact int) Need {
		counted = false
		return Need{Bound: bound, MaxOut: 100, Exact: func() int { counted = true; return exact }}
	}
	if why := spend.Over(need(500, 0)); why != "" || counted {
		t.Fatalf("a bound within the budget: %q, counted %v", why, counted)
	}
	if why := spend.Over(need(501, 500)); why != "" || !counted {
		t.Fatalf("a bound over it, a count within: %q, counted %v", why, counted)
	}
	if why := spend.Over(need(900, 501)); !counted || !strings.Contains(why, "(sessionTokens)") {
		t.Fatalf("a count over it: %q, counted %v", why, counted)
	}
	spend.Budget = store.Budget{PromptCost: store.Some(1.0)}
	spend.InRun = true
	if why := spend.Over(need(10, 10)); !strings.Contains(why, "no prices") {
		t.Fatalf("a cost budget without prices: %q", why)
	}
}
