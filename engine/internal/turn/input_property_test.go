package turn

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
)

// TestCachedModelInputEqualsOneBuiltFromScratch grows random histories
// (user, assistant and tool messages, messages naming skills whose
// instructions change, new checkpoints, a changing system prompt, resumes)
// and after each step builds the next request from one State kept across
// the steps and from a fresh one, then counts it from scratch: the cached
// model input must carry the same messages, and the cached bound and exact
// count (and the count of what a checkpoint would keep) must be what
// counting every message of the request gives. engine's test of the same
// name checks the same of a whole session (aborts, failed saves, reopening).
func TestCachedModelInputEqualsOneBuiltFromScratch(t *testing.T) {
	var tok Counter
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { cachedStateProperty(t, &tok, seed) })
	}
}

func cachedStateProperty(t *testing.T, tok *Counter, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	var st State
	var hist []convo.Message
	var base Base
	body := "BODY-0"
	expand := func(m convo.Message) convo.Message {
		blocks := []convo.Block{{Type: convo.BlockText, Text: "skill " + strings.Join(m.Skills, ",") + ": " + body}}
		m.Content = append(blocks, m.Content...)
		return m
	}
	spec := Spec{Model: "m", MaxOutputTokens: 100, System: "You are a test.", Tools: []provider.Tool{
		{Name: "read", Description: "Read a file", Schema: []byte(`{"type":"object"}`)},
	}}
	text := func(role string, words int) convo.Message {
		var b strings.Builder
		for range words {
			fmt.Fprintf(&b, "w%d ", rng.IntN(1000))
		}
		return convo.Message{Role: role, Content: []convo.Block{{Type: convo.BlockText, Text: b.String()}}}
	}
	var log []string
	for step := range 120 {
		op := rng.IntN(8)
		log = append(log, fmt.Sprint(op))
		switch op {
		case 0, 1:
			hist = append(hist, text(convo.RoleUser, 1+rng.IntN(20)))
		case 2:
			hist = append(hist, text(convo.RoleAssistant, 1+rng.IntN(20)))
		case 3:
			call := convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "c", Name: "read", Arguments: []byte(`{"path":"x"}`)}}}
			hist = append(hist, call, text(convo.RoleToolResult, 1+rng.IntN(5)))
		case 4:
			m := text(convo.RoleUser, 3)
			m.Skills = []string{"review"}
			hist = append(hist, m)
		case 5:
			body = fmt.Sprint("BODY-", step)
		case 6:
			if cut, ok := CompactionCut(hist, base.From); ok {
				base = Base{Summary: fmt.Sprint("summary ", step), From: cut}
			}
		case 7:
			spec.System = fmt.Sprint("You are test ", rng.IntN(3), ".")
		}
		what := "ops " + strings.Join(log, ",")

		d := st.Take(hist, base)
		req, cost, u := d.Build(spec, expand)
		st.Apply(u)
		var fresh State
		fd := fresh.Take(hist, base)
		freq, fcost, _ := fd.Build(spec, expand)
		if !reflect.DeepEqual(req.Messages, freq.Messages) || req.System != freq.System {
			t.Fatalf("%s: the cached model input differs from one built from scratch:\ncached %v\nfresh  %v", what, req.Messages, freq.Messages)
		}
		if !cost.Input().cont && cap(req.Messages) != len(req.Messages) {
			// (A resumed request's messages are a copy of their own.)
			t.Fatalf("%s: a request's messages must be capped: appending to them would write into the State's", what)
		}
		wantBound := fixedTokens(req.System, req.Tools, Bound)
		for i := range req.Messages {
			wantBound += MessageBound(&req.Messages[i])
		}
		if cost.Bound() != wantBound || fcost.Bound() != wantBound {
			t.Fatalf("%s: bound %d cached, %d fresh, %d counted message by message", what, cost.Bound(), fcost.Bound(), wantBound)
		}
		if rng.IntN(3) == 0 {
			continue // the exact sums grow only when a request needs them
		}
		exact, u := cost.Exact(tok, st.Sums())
		st.Apply(u)
		want := fixedTokens(req.System, req.Tools, tok.Count)
		for i := range req.Messages {
			want += tok.MessageTokens(&req.Messages[i])
		}
		if exact != want {
			t.Fatalf("%s: exact count %d, %d counted message by message", what, exact, want)
		}
		if exact > cost.Bound() {
			t.Fatalf("%s: the bound %d is below the count %d", what, cost.Bound(), exact)
		}
		if cut, ok := CompactionCut(hist, base.From); ok {
			kept, u := cost.Kept(tok, st.Sums(), cut)
			st.Apply(u)
			lead := summaryMessage("", contextAt(hist, cut))
			want := fixedTokens(req.System, req.Tools, tok.Count) + tok.MessageTokens(&lead)
			in := cost.Input()
			for i := in.off; i < len(req.Messages); i++ {
				if (in.cont && i == len(req.Messages)-1) || in.histIndex(i) >= cut {
					want += tok.MessageTokens(&req.Messages[i])
				}
			}
			if kept != want {
				t.Fatalf("%s: a checkpoint at %d keeps %d tokens, %d counted message by message", what, cut, kept, want)
			}
		}
		if n, _ := HistoryTokens(tok, st.Sums(), hist, base.From, len(hist), base.ToolOutputMax); true {
			want := 0
			for i := base.From; i < len(hist); i++ {
				want += tok.MessageTokens(shown(&hist[i], i, base.ToolOutputMax))
			}
			if n != want {
				t.Fatalf("%s: the history from %d counts %d tokens, %d message by message", what, base.From, n, want)
			}
		}
		// A compaction plan: its summary request fits the limit and ends
		// at a step, its checkpoint ends at a user or assistant message
		// the summary covers, and what it keeps counts as Kept does.
		limit := fixedTokens(req.System, req.Tools, tok.Count) + 50 + rng.IntN(400)
		if p, u, ok := cost.Plan(tok, st.Sums(), limit, limit/4, -1); ok {
			st.Apply(u)
			n := fixedTokens(req.System, req.Tools, tok.Count)
			for _, m := range cost.SummaryMessages(p.End) {
				n += tok.MessageTokens(&m)
			}
			switch {
			case n > limit:
				t.Fatalf("%s: the summary request takes %d tokens, over %d", what, n, limit)
			case !endsStep(hist, p.End):
				t.Fatalf("%s: the summary request ends inside a step, at %d", what, p.End)
			case p.Cut > p.End || p.Cut >= len(hist) || hist[p.Cut].Role == convo.RoleToolResult || p.Cut < base.From+2:
				t.Fatalf("%s: the checkpoint ends at %d (%s), the summary at %d, the history has %d", what, p.Cut, hist[min(p.Cut, len(hist)-1)].Role, p.End, len(hist))
			}
			if kept, u := cost.Kept(tok, st.Sums(), p.Cut); kept != p.Kept {
				t.Fatalf("%s: the plan keeps %d tokens, Kept counts %d", what, p.Kept, kept)
			} else {
				st.Apply(u)
			}
		}
	}
}
