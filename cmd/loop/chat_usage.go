package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// The chat's view of the usage ledger (docs/protocol.md 4.12): a line
// after each prompt's run, /usage for the session's totals and /budget
// for its limits (session/set_budget).

// formatCost is a cost in the currency of the configured prices: six
// significant digits, enough for a call's fraction of a cent without the
// float noise of a sum.
func formatCost(c float64) string { return strconv.FormatFloat(c, 'g', 6, 64) }

// callsText is "1 call" or "N calls".
func callsText(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// promptUsageLine is the line shown when a prompt's run settles: its
// tokens and, when every call was priced, its cost; "" when it made no
// call (a budget refused it, or it stopped before asking the model).
func promptUsageLine(u convo.UsageSum) string {
	if u.Calls == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  (%d tokens", u.TotalTokens)
	if u.Calls > 1 {
		fmt.Fprintf(&b, " in %s", callsText(u.Calls))
	}
	fmt.Fprintf(&b, ": input %d, output %d", u.Input, u.Output)
	if u.CacheRead > 0 {
		fmt.Fprintf(&b, ", cache read %d", u.CacheRead)
	}
	if u.CacheWrite > 0 {
		fmt.Fprintf(&b, ", cache write %d", u.CacheWrite)
	}
	if u.CostKnown() {
		fmt.Fprintf(&b, "; cost %s", formatCost(u.Cost))
	}
	b.WriteString(")")
	return b.String()
}

// sumText is a total in short: tokens, calls and its cost if known.
func sumText(u *convo.UsageSum) string {
	if u.Calls == 0 {
		return "none"
	}
	s := fmt.Sprintf("%d tokens in %s", u.TotalTokens, callsText(u.Calls))
	if u.CostKnown() {
		s += ", cost " + formatCost(u.Cost)
	}
	return s
}

// usageReport is /usage: the session's ledger, the background calls
// apart, and its budget.
func usageReport(st *engine.State) string {
	u := &st.Usage
	var b strings.Builder
	if u.Calls == 0 {
		b.WriteString("usage: no model calls yet")
	} else {
		fmt.Fprintf(&b, "usage: %s", sumText(&u.UsageSum))
		if !u.CostKnown() {
			if u.Unpriced == u.Calls {
				b.WriteString(", cost unknown: the models have no prices in config.json (models[].cost)")
			} else {
				fmt.Fprintf(&b, ", cost unknown: %d of the %s had no prices in config.json (models[].cost)", u.Unpriced, callsText(u.Calls))
			}
		}
		fmt.Fprintf(&b, "\n  input %d, output %d, cache read %d, cache write %d", u.Input, u.Output, u.CacheRead, u.CacheWrite)
		fmt.Fprintf(&b, "\n  titles: %s", sumText(&u.Title))
		fmt.Fprintf(&b, "\n  compaction: %s", sumText(&u.Compaction))
		b.WriteString("\n  (titles and compaction are in the totals)")
	}
	b.WriteString("\n" + budgetReport(st))
	return b.String()
}

// budgetReport is the session's limits and what each leaves: the
// session's limits against its totals, the prompt's against the last
// prompt's run (a run in progress checks each request against them).
func budgetReport(st *engine.State) string {
	bud, u := &st.Budget, &st.Usage.UsageSum
	if bud.IsZero() {
		return "budget: none (/budget sets one)"
	}
	var last *convo.UsageSum
	if n := len(st.PromptTimings); n > 0 {
		last = &st.PromptTimings[n-1].Usage
	}
	var parts []string
	if l := bud.SessionTokens; l.Set {
		parts = append(parts, fmt.Sprintf("sessionTokens %d (%s)", l.Value, tokensLeft(l.Value, u.TotalTokens)))
	}
	if l := bud.SessionCost; l.Set {
		parts = append(parts, fmt.Sprintf("sessionCost %s (%s)", formatCost(l.Value), costLeft(l.Value, u)))
	}
	if l := bud.PromptTokens; l.Set {
		p := fmt.Sprintf("promptTokens %d per prompt", l.Value)
		if last != nil {
			p += fmt.Sprintf(" (the last prompt used %d)", last.TotalTokens)
		}
		parts = append(parts, p)
	}
	if l := bud.PromptCost; l.Set {
		p := fmt.Sprintf("promptCost %s per prompt", formatCost(l.Value))
		switch {
		case last != nil && last.Calls == 0:
			p += " (the last prompt made no call)"
		case last != nil && last.CostKnown():
			p += " (the last prompt cost " + formatCost(last.Cost) + ")"
		case last != nil:
			p += " (the last prompt's cost is unknown)"
		}
		parts = append(parts, p)
	}
	return "budget: " + strings.Join(parts, ", ")
}

func tokensLeft(limit, used int) string {
	if used >= limit {
		return fmt.Sprintf("none left: %d used", used)
	}
	return fmt.Sprintf("%d left", limit-used)
}

func costLeft(limit float64, u *convo.UsageSum) string {
	switch {
	case u.Unpriced > 0:
		return "cannot be checked: calls without prices"
	case u.Cost >= limit:
		return "none left: " + formatCost(u.Cost) + " used"
	}
	return formatCost(limit-u.Cost) + " left"
}

const budgetUsage = "usage: /budget [LIMIT VALUE|off]... where LIMIT is sessionTokens, sessionCost, promptTokens or promptCost"

// budget is /budget: without arguments the limits; else pairs of a
// limit and a value (or off, which clears it), set together, as one
// session/set_budget.
func (c *chat) budget(args []string) {
	s := c.session()
	if len(args) == 0 {
		c.say("%s", budgetReport(&s.Snapshot().State))
		return
	}
	if len(args)%2 != 0 {
		c.say("%s", budgetUsage)
		return
	}
	var ch engine.BudgetChange
	for i := 0; i < len(args); i += 2 {
		name, v := args[i], args[i+1]
		var err error
		switch strings.ToLower(name) {
		case "sessiontokens":
			ch.SessionTokens, err = tokenLimit(name, v)
		case "prompttokens":
			ch.PromptTokens, err = tokenLimit(name, v)
		case "sessioncost":
			ch.SessionCost, err = costLimit(name, v)
		case "promptcost":
			ch.PromptCost, err = costLimit(name, v)
		default:
			err = fmt.Errorf("no limit %s (%s)", name, budgetUsage)
		}
		if err != nil {
			c.say("  %v", err)
			return
		}
	}
	snap, err := s.SetBudget(ch)
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	c.say("%s", budgetReport(&snap.State))
}

func tokenLimit(name, v string) (*engine.BudgetLimit[int], error) {
	if strings.EqualFold(v, "off") {
		return &engine.BudgetLimit[int]{Clear: true}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s takes a whole number of tokens or off, not %q", name, v)
	}
	return &engine.BudgetLimit[int]{Value: n}, nil
}

func costLimit(name, v string) (*engine.BudgetLimit[float64], error) {
	if strings.EqualFold(v, "off") {
		return &engine.BudgetLimit[float64]{Clear: true}, nil
	}
	// NaN and Inf parse, and SetBudget refuses them as it does negatives
	// (store.Budget.Validate).
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, fmt.Errorf("%s takes a cost (a number, in the currency of the prices in config.json) or off, not %q", name, v)
	}
	return &engine.BudgetLimit[float64]{Value: f}, nil
}
