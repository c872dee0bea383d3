package turn

import (
	"github.com/loopdev/loop/convo"
)

// A compaction's summary request is the request the session was about to
// send, unchanged (system prompt, tools, history), cut to what fits the
// window and followed by one more user message asking for the summary: so
// it reads almost all of itself from the provider's prompt cache, which
// the requests before it wrote (docs/performance.md, "Tokens a session
// sends"). Its checkpoint then keeps verbatim only the last messages,
// about a quarter of the window's room, so that the requests after it have
// room to grow before the next compaction.

// SummaryMarker is in the instruction of every summary request: the
// phrase a fake model (or a reader of a trace) tells them apart by.
const SummaryMarker = "context summarization checkpoint"

// summaryInstruction ends a summary request.
const summaryInstruction = `Stop here: this is a ` + SummaryMarker + `. Do not call any tool. Write a summary of the whole conversation above, the earlier summary included if there is one, so that the work can continue from the summary alone. Write it in this shape:

## Goal
## Constraints
## Progress
## Key Decisions
## Next Steps
## Critical Context
(files, commands, identifiers and exact values the work depends on)`

// SummaryInstruction is the last message of a summary request.
func SummaryInstruction() convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: summaryInstruction}}}
}

// Plan is a compaction of a request: its summary request carries the
// request's model input up to history index End (0: the request does not
// fit even cut, and the summary is asked for another way), and the
// checkpoint ends at history index Cut. Kept is the exact count of the
// request the checkpoint leaves, with an empty summary.
type Plan struct {
	End, Cut, Kept int
}

// SummaryMessages is the summary request's messages for a plan ending at
// end: the request's model input up to there, then the instruction. It
// shares the input's memory (capped, so appending copies).
func (c *Cost) SummaryMessages(end int) []convo.Message {
	k := c.in.off + end - c.in.from
	return append(c.in.msgs[:k:k], SummaryInstruction())
}

// Plan picks a compaction of the request: End, the longest prefix of its
// model input that, followed by the instruction, fits in limit tokens and
// ends where a user message may follow (not between a tool call and its
// results); Cut, where the checkpoint ends: at or before End, at a user or
// assistant message (a tool result stays with its call), at least two
// messages after the current checkpoint, leaving at least one message.
// When cut >= 0 the cut is given (manual compaction: the last user
// message); otherwise it is the earliest cut whose kept messages take at
// most keep tokens, else the latest. ok is false when no plan exists.
func (c *Cost) Plan(tok *Counter, s Sums, limit, keep, cut int) (Plan, Update, bool) {
	var u Update
	in := &c.in
	hist, from, n := in.hist, in.from, len(in.hist)
	fixed := c.fixedTokens(tok, &u)
	pre := in.prefixTokens(tok, s, &u)
	lead := 0
	if in.off == 1 {
		lead = tok.MessageTokens(&in.msgs[0])
	}
	instr := SummaryInstruction()
	ask := fixed + lead + tok.MessageTokens(&instr)
	end := -1
	for k := n; k > from; k-- {
		if endsStep(hist, k) && ask+pre[k-from] <= limit {
			end = k
			break
		}
	}
	if end < 0 {
		return Plan{}, u, false
	}
	tailEnd := pre[n-from]
	if in.cont {
		tailEnd += tok.MessageTokens(&in.msgs[len(in.msgs)-1])
	}
	kept := func(c int) int {
		lead := summaryMessage("", contextAt(hist, c))
		return fixed + tok.MessageTokens(&lead) + tailEnd - pre[c-from]
	}
	can := func(c int) bool {
		return c >= from+2 && c <= end && c < n && hist[c].Role != convo.RoleToolResult
	}
	if cut >= 0 {
		if !can(cut) {
			return Plan{}, u, false
		}
		return Plan{End: end, Cut: cut, Kept: kept(cut)}, u, true
	}
	for c := from + 2; c <= end && c < n; c++ {
		if can(c) && tailEnd-pre[c-from] <= keep {
			return Plan{End: end, Cut: c, Kept: kept(c)}, u, true
		}
	}
	for c := min(end, n-1); c >= from+2; c-- {
		if can(c) {
			return Plan{End: end, Cut: c, Kept: kept(c)}, u, true
		}
	}
	return Plan{}, u, false
}

// endsStep reports whether a user message may follow hist[:k]: it does not
// end in an assistant message whose tool calls await results, nor inside
// a run of results.
func endsStep(hist []convo.Message, k int) bool {
	if k < len(hist) && hist[k].Role == convo.RoleToolResult {
		return false
	}
	last := &hist[k-1]
	if last.Role != convo.RoleAssistant {
		return true
	}
	for i := range last.Content {
		if last.Content[i].Type == convo.BlockToolCall {
			return false
		}
	}
	return true
}

// prefixTokens is the exact count of the model input's history messages
// from in.from up to each index: pre[k-from] counts history[from:k], skill
// messages as expanded. The running sums s give what they hold; the rest
// is counted once and kept through u.
func (in *Input) prefixTokens(tok *Counter, s Sums, u *Update) []int {
	from, n := in.from, len(in.hist)
	_, g := s.exact.sum(in.hist, from, n, in.max, tok.MessageTokens)
	u.exact = g
	r := s.exact
	r.grow(&g)
	pre := make([]int, n-from+1)
	if r.from <= from && r.from+len(r.sums)-1 >= n {
		for k := from; k <= n; k++ {
			pre[k-from] = r.sums[k-r.from] - r.sums[from-r.from]
		}
	} else {
		for k := from; k < n; k++ {
			c := 0
			if !NamesSkills(&in.hist[k]) {
				c = tok.MessageTokens(shown(&in.hist[k], k, in.max))
			}
			pre[k+1-from] = pre[k-from] + c
		}
	}
	for _, i := range in.skills {
		h := in.histIndex(i)
		c := tok.MessageTokens(&in.msgs[i])
		for k := h + 1; k <= n; k++ {
			pre[k-from] += c
		}
	}
	return pre
}
