package turn

import "github.com/loopdev/loop/convo"

// A model request carries the history after the latest checkpoint. So
// that a turn costs what it adds, not what the session already holds, the
// session keeps that model input, and the token bounds and counts of its
// messages as running sums (State), and each request build only appends
// what is new (docs/performance.md, "Engine: a prompt costs what it adds").
//
// Both share memory with what earlier builds handed out, which is safe
// because history messages never change once appended, every slice handed
// out is capped, and the shared arrays are only ever written past the
// length of any slice handed out, under the lock that guards the State
// (the session's: docs/lock-order.md).

// State is what a session keeps between its model requests: the cached
// model input, the running token sums over the history, and the cost of
// the latest system prompt and tools. The zero State holds nothing yet.
// Its methods only copy or append, and expect the caller to hold the lock
// that guards it and the history given to Take; what reads files, scans
// text or tokenizes happens in Draft.Build and Cost's methods, without it,
// and what they computed comes back as an Update for Apply.
type State struct {
	input  cache
	bounds sums // upper bounds of each message's tokens (Bound)
	exact  sums // exact counts (Counter), only once a request needed them
	fixed  *fixedCost
}

// Base is where a model input starts: after the latest compaction
// checkpoint, whose Summary stands for the first From messages of the
// history. The zero Base (no summary) is the start of the history.
type Base struct {
	Summary string
	From    int
	// ToolOutputMax bounds the tool output the model gets (shown); 0:
	// none.
	ToolOutputMax int
}

// cache is the model input for history[:end] after base.
type cache struct {
	gen    uint64          // changes whenever msgs is replaced by another array
	base   Base            // where msgs starts
	from   int             // the history index of the first message after the summary
	off    int             // 1 when msgs starts with the summary, else 0
	msgs   []convo.Message // [summary] history[from:end], skill messages expanded as last sent
	skills []int           // indices into msgs of the messages naming skills
}

// sums is a running sum over the history, by history index: sums[i] is
// the cost of history[from:from+i]. Messages naming skills count 0: their
// expansion reads skill files that may change, so each request counts them
// afresh. It starts where the first request needed it (the checkpoint
// then), so it never reaches back before a checkpoint, and starts anew at
// a later one.
type sums struct {
	from int
	sums []int
}

// Input is one request's model input and what costing it needs.
type Input struct {
	msgs   []convo.Message // what the request carries, capped
	hist   []convo.Message // history[:end], capped
	from   int             // the history index msgs[off] holds
	off    int             // 1 when msgs[0] is the checkpoint's summary
	skills []int           // indices into msgs of expanded skill messages
	cont   bool            // msgs ends with resumePrompt
	bound  int             // an upper bound of the messages' tokens
	gen    uint64          // the cache's generation msgs came from
	max    int             // the bound of tool output (Base.ToolOutputMax)
}

// History is the history the input was built from, capped.
func (in *Input) History() []convo.Message { return in.hist }

// histIndex is the history index of msgs[i] (i >= off, not the resume
// prompt).
func (in *Input) histIndex(i int) int { return in.from + i - in.off }

// NamesSkills reports whether m names skills, whose expansion the model
// input carries instead of m itself.
func NamesSkills(m *convo.Message) bool { return m.Role == convo.RoleUser && len(m.Skills) > 0 }

// Draft is what a request build copies out of a State under the lock.
type Draft struct {
	in     Input
	bounds sums
	fixed  *fixedCost
}

// Take brings the cached model input up to hist (the whole history) and
// base, and copies out what a request build needs. It only copies message
// headers.
func (st *State) Take(hist []convo.Message, base Base) Draft {
	if base.ToolOutputMax != st.input.base.ToolOutputMax && st.input.msgs != nil {
		// The running sums counted tool output as the old bound showed it.
		st.bounds, st.exact = sums{}, sums{}
	}
	return Draft{in: st.input.update(hist, base), bounds: st.bounds.view(), fixed: st.fixed}
}

// NamesSkills reports whether the draft's model input holds messages
// naming skills, which Build expands: only then need the skills be read.
func (d *Draft) NamesSkills() bool { return len(d.in.skills) > 0 }

func (c *cache) update(hist []convo.Message, base Base) Input {
	n := len(hist)
	if base.Summary == "" || base.From > n {
		base.Summary, base.From = "", 0 // a checkpoint beyond the history stands for nothing
	}
	if c.msgs == nil || c.base != base {
		c.gen++
		c.base, c.from, c.off, c.skills = base, 0, 0, nil
		c.msgs = make([]convo.Message, 0, n+8)
		if base.Summary != "" {
			c.from, c.off = base.From, 1
			c.msgs = append(c.msgs, summaryMessage(base.Summary, contextAt(hist, base.From)))
		}
	}
	for i := c.from + len(c.msgs) - c.off; i < n; i++ {
		if NamesSkills(&hist[i]) {
			c.skills = append(c.skills, len(c.msgs))
		}
		c.msgs = append(c.msgs, *shown(&hist[i], i, base.ToolOutputMax))
	}
	return Input{
		msgs:   c.msgs[:len(c.msgs):len(c.msgs)],
		hist:   hist[:n:n],
		from:   c.from,
		off:    c.off,
		skills: c.skills[:len(c.skills):len(c.skills)],
		gen:    c.gen,
		max:    c.base.ToolOutputMax,
	}
}

// summaryPrefix introduces a checkpoint's summary in model input.
const summaryPrefix = "The earlier part of this conversation was compacted. Summary of it:\n\n"

// summaryMessage stands for the messages a checkpoint replaces: the
// context they established (contextAt), then the summary.
func summaryMessage(summary string, context []convo.Block) convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: append(context, convo.Block{Type: convo.BlockText, Text: summaryPrefix + summary})}
}

// resumePrompt asks the model to continue stopped work (model input only).
const resumePrompt = "Continue from where you stopped."

func resumeMessage() convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: resumePrompt}}}
}

// finish sums in's token bound, expands its skill messages with expand
// and adds the resume prompt when the input ends in the model's own
// message. An expansion that differs from the one last sent is written
// into a copy, which u asks the State to keep, so a session whose skills
// stay the same copies nothing.
func (in *Input) finish(bounds sums, expand func(convo.Message) convo.Message, u *Update) {
	in.bound, u.bounds = bounds.sum(in.hist, in.from, len(in.hist), in.max, MessageBound)
	if in.off == 1 {
		in.bound += MessageBound(&in.msgs[0])
	}
	if len(in.skills) > 0 {
		var copied []convo.Message
		for _, i := range in.skills {
			m := expand(in.hist[in.histIndex(i)])
			in.bound += MessageBound(&m)
			if sameContent(m.Content, in.msgs[i].Content) {
				continue
			}
			if copied == nil {
				// Room to grow, so the cache appends in place again.
				copied = append(make([]convo.Message, 0, len(in.msgs)+len(in.msgs)/4+8), in.msgs...)
				in.msgs = copied[:len(copied):len(copied)]
			}
			in.msgs[i] = m
		}
		if copied != nil {
			u.input, u.gen = copied, in.gen
		}
	}
	if n := len(in.msgs); n > 0 && in.msgs[n-1].Role == convo.RoleAssistant {
		// Resuming after a stop: the history ends in the model's own
		// partial answer. APIs treat a final assistant message as a
		// prefill with rules of its own (Anthropic rejects trailing
		// whitespace and thinking there), so the model is asked to go on.
		// (in.msgs is capped: this append copies, once per resume.)
		cont := resumeMessage()
		in.msgs = append(in.msgs, cont)
		in.cont = true
		in.bound += MessageBound(&cont)
	}
}

// sameContent: the same blocks, text for text. An expansion prepends
// blocks to the message's own, which it shares.
func sameContent(a, b []convo.Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Text != b[i].Text {
			return false
		}
	}
	return true
}

// view copies r for use without the lock: capped, so that what r appends
// later never shows in it.
func (r *sums) view() sums { return sums{from: r.from, sums: r.sums[:len(r.sums):len(r.sums)]} }

// grown is what one sum added to a running sum, for Apply; the zero
// grown adds nothing.
type grown struct {
	fresh bool // the sum started anew at from
	from  int  // the history index the sum started from
	base  int  // the view's from
	had   int  // the view's length
	n     int  // how many sums were added, when they fit in small
	small [8]int
	large []int // the sums added, when more than small holds
}

// added is the sums past the view's end.
func (g *grown) added() []int {
	if g.large != nil {
		return g.large
	}
	return g.small[:g.n]
}

// sum is the sum of cost over hist[from:to] (hist a prefix of the
// history), skill messages counted as 0, from the view r. It costs only
// what r does not hold yet; what it added is returned for Apply.
//
// Each message is costed as the model gets it (shown, with max).
func (r sums) sum(hist []convo.Message, from, to, max int, cost func(*convo.Message) int) (int, grown) {
	base, s := r.from, r.sums
	fresh := len(s) == 0 || from < base || from > base+len(s)-1
	if fresh {
		base, s = from, []int{0}
	}
	covered := base + len(s) - 1
	if to <= covered {
		return s[to-base] - s[from-base], grown{}
	}
	// A request usually adds a few messages: their sums travel in the
	// grown itself, so that costing them allocates nothing.
	g := grown{fresh: fresh, from: from, base: base, had: len(s)}
	if k := to - covered; k > len(g.small) {
		g.large = make([]int, k)
	} else {
		g.n = k
	}
	sum := s[len(s)-1]
	for i := covered; i < to; i++ {
		if !NamesSkills(&hist[i]) {
			sum += cost(shown(&hist[i], i, max))
		}
		if g.large != nil {
			g.large[i-covered] = sum
		} else {
			g.small[i-covered] = sum
		}
	}
	return sum - s[from-base], g
}

// grow adds g to r, unless r changed since g's view so that g no longer
// continues it.
func (r *sums) grow(g *grown) {
	add := g.added()
	switch {
	case len(add) == 0:
	case g.fresh && (len(r.sums) == 0 || r.from+len(r.sums)-1 < g.from):
		// A later checkpoint: what lies before it is never sent again.
		r.from, r.sums = g.from, append([]int{0}, add...)
	case !g.fresh && r.from == g.base && len(r.sums) == g.had:
		r.sums = append(r.sums, add...)
	}
}

// Update is what a build or a count computed for the State to keep:
// running sums grown, a changed skill expansion, a new or newly counted
// fixed cost. The zero Update keeps nothing.
type Update struct {
	bounds, exact grown
	input         []convo.Message // the model input with changed expansions
	gen           uint64          // the cache generation input was copied from
	fixed         *fixedCost      // a new fixed cost, replacing any
	counted       *fixedCost      // fixed counted exactly, replacing counted.of
	of            *fixedCost
}

// Apply keeps what u computed, where the State has not moved on since.
func (st *State) Apply(u Update) {
	st.bounds.grow(&u.bounds)
	st.exact.grow(&u.exact)
	if c := &st.input; u.input != nil && c.gen == u.gen && len(c.msgs) == len(u.input) {
		c.gen++
		c.msgs = u.input
	}
	if u.fixed != nil {
		st.fixed = u.fixed
	}
	if u.counted != nil && st.fixed == u.of {
		st.fixed = u.counted
	}
}

// Sums copies the State's exact running sums for a count without the
// lock (Cost.Exact, Cost.Kept, HistoryTokens).
func (st *State) Sums() Sums { return Sums{exact: st.exact.view()} }

// Sums is a copy of a State's exact running sums.
type Sums struct{ exact sums }

// HistoryTokens is the exact token count of hist[from:to] (hist a prefix
// of the history) as the history holds it, skill messages unexpanded: what
// a compaction replaces. History messages are counted once per session,
// through the running sums s copies.
func HistoryTokens(tok *Counter, s Sums, hist []convo.Message, from, to, max int) (int, Update) {
	n := 0
	for i := from; i < to; i++ {
		if NamesSkills(&hist[i]) {
			n += tok.MessageTokens(&hist[i]) // the running sums leave them out
		}
	}
	if from >= to {
		return n, Update{}
	}
	m, g := s.exact.sum(hist, from, to, max, tok.MessageTokens)
	return n + m, Update{exact: g}
}
