package engine

import "github.com/loopdev/loop/convo"

// A model request carries the history after the latest checkpoint. So
// that a turn costs what it adds, not what the session already holds, the
// session keeps that model input, and the token bounds and counts of its
// messages as running sums, and each request build only appends what is
// new (docs/performance.md, "Engine: a prompt costs what it adds").
//
// Both share memory with what earlier builds handed out, which is safe
// for the reasons historyView gives: history messages never change once
// appended, every slice handed out is capped, and the shared arrays are
// only ever written past the length of any slice handed out, under the
// session lock.

// inputCache is the model input for history[:end] after checkpoint cp.
// Guarded by Session.mu.
type inputCache struct {
	gen    uint64          // changes whenever msgs is replaced by another array
	cp     *checkpoint     // the checkpoint msgs starts from, nil when none
	from   int             // the history index of the first message after the summary
	off    int             // 1 when msgs starts with the summary, else 0
	msgs   []convo.Message // [summary] history[from:end], skill messages expanded as last sent
	skills []int           // indices into msgs of the messages naming skills
}

// tokenLedger holds running token sums over the history, by history
// index: upper bounds (tokenBound) and exact counts. Messages naming skills
// count 0 in both: their expansion reads skill files that may change, so
// each request counts them afresh. Guarded by Session.mu.
type tokenLedger struct {
	bounds, exact runningSum
}

// runningSum: sums[i] is the cost of history[from:from+i]. It starts where
// the first request needed it (the checkpoint then), so it never reaches
// back before a checkpoint, and starts anew at a later one.
type runningSum struct {
	from int
	sums []int
}

// modelInput is one request's model input and what costing it needs.
type modelInput struct {
	msgs   []convo.Message // what the request carries, capped
	hist   []convo.Message // history[:end], capped
	from   int             // the history index msgs[off] holds
	off    int             // 1 when msgs[0] is the checkpoint's summary
	skills []int           // indices into msgs of expanded skill messages
	cont   bool            // msgs ends with resumePrompt
	bound  int             // an upper bound of the messages' tokens
}

// histIndex is the history index of msgs[i] (i >= off, not the resume
// prompt).
func (in *modelInput) histIndex(i int) int { return in.from + i - in.off }

func namesSkills(m *convo.Message) bool { return m.Role == convo.RoleUser && len(m.Skills) > 0 }

// modelInputLocked brings the cached model input up to the history and
// the checkpoint and returns it. It only copies message headers: what
// reads files, scans text or tokenizes runs after, without the lock
// (finishInput).
func (s *Session) modelInputLocked() modelInput {
	n := len(s.history)
	c := &s.input
	cp := s.checkpointLocked()
	if cp != nil && cp.MessageCount > n {
		cp = nil // a checkpoint beyond the history stands for nothing
	}
	if c.msgs == nil || c.cp != cp {
		c.gen++
		c.cp, c.from, c.off, c.skills = cp, 0, 0, nil
		c.msgs = make([]convo.Message, 0, n+8)
		if cp != nil {
			c.from, c.off = cp.MessageCount, 1
			c.msgs = append(c.msgs, summaryMessage(cp.Summary))
		}
	}
	for i := c.from + len(c.msgs) - c.off; i < n; i++ {
		if namesSkills(&s.history[i]) {
			c.skills = append(c.skills, len(c.msgs))
		}
		c.msgs = append(c.msgs, s.history[i])
	}
	return modelInput{
		msgs:   c.msgs[:len(c.msgs):len(c.msgs)],
		hist:   s.history[:n:n],
		from:   c.from,
		off:    c.off,
		skills: c.skills[:len(c.skills):len(c.skills)],
	}
}

func summaryMessage(summary string) convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: summaryPrefix + summary}}}
}

// finishInput sums in's token bound, expands its skill messages (reading
// the skill folder once, when there are any) and adds the resume prompt when the input ends
// in the model's own message. An expansion that differs from the one last
// sent is written into a copy, which the cache then keeps, so a session
// whose skills stay the same copies nothing. It runs without the lock.
func (s *Session) finishInput(in *modelInput, gen uint64) {
	in.bound = s.sumTokens(&s.ledger.bounds, in.hist, in.from, len(in.hist), messageBound)
	if in.off == 1 {
		in.bound += messageBound(&in.msgs[0])
	}
	if len(in.skills) > 0 {
		have := s.e.skillsIn(s.skillCwd())
		var copied []convo.Message
		for _, i := range in.skills {
			m := s.expandSkills(in.hist[in.histIndex(i)], have)
			in.bound += messageBound(&m)
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
			s.mu.Lock()
			if c := &s.input; c.gen == gen && len(c.msgs) == len(copied) {
				c.gen++
				c.msgs = copied
			}
			s.mu.Unlock()
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
		in.bound += messageBound(&cont)
	}
}

func resumeMessage() convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: resumePrompt}}}
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

// exactInputTokens counts in's messages from history index from on, as a
// request carries them, led by lead (the checkpoint's summary, or the one
// a compaction would write; nil: none) and ending in the resume prompt
// when in does. History messages are counted once per session
// (ledgerTokens); skill messages are counted as expanded.
func (s *Session) exactInputTokens(in *modelInput, from int, lead *convo.Message) int {
	tok := &s.e.tokens
	n := s.ledgerTokens(in.hist, from, len(in.hist))
	if lead != nil {
		n += tok.messageTokens(lead)
	}
	for _, i := range in.skills {
		if in.histIndex(i) >= from {
			n += tok.messageTokens(&in.msgs[i])
		}
	}
	if in.cont {
		n += tok.messageTokens(&in.msgs[len(in.msgs)-1])
	}
	return n
}

// ledgerTokens is the exact token count of hist[from:to] (hist a prefix
// of the history), skill messages counted as 0.
func (s *Session) ledgerTokens(hist []convo.Message, from, to int) int {
	return s.sumTokens(&s.ledger.exact, hist, from, to, s.e.tokens.messageTokens)
}

// sumTokens is the sum of cost over hist[from:to] (hist a prefix of the
// history), skill messages counted as 0, from the running sum r (a field of
// s.ledger). It costs only what r does not hold yet, without the lock, and
// appends the new sums to r.
func (s *Session) sumTokens(r *runningSum, hist []convo.Message, from, to int, cost func(*convo.Message) int) int {
	s.mu.Lock()
	base, sums := r.from, r.sums[:len(r.sums):len(r.sums)]
	s.mu.Unlock()
	fresh := len(sums) == 0 || from < base || from > base+len(sums)-1
	if fresh {
		base, sums = from, []int{0}
	}
	covered := base + len(sums) - 1
	if to <= covered {
		return sums[to-base] - sums[from-base]
	}
	add := make([]int, 0, to-covered)
	sum := sums[len(sums)-1]
	for i := covered; i < to; i++ {
		if !namesSkills(&hist[i]) {
			sum += cost(&hist[i])
		}
		add = append(add, sum)
	}
	s.mu.Lock()
	switch {
	case fresh && (len(r.sums) == 0 || r.from+len(r.sums)-1 < from):
		// A later checkpoint: what lies before it is never sent again.
		r.from, r.sums = from, append([]int{0}, add...)
	case !fresh && r.from == base && len(r.sums) == len(sums):
		r.sums = append(r.sums, add...)
	}
	s.mu.Unlock()
	return sum - sums[from-base]
}
