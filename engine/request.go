package engine

import (
	"context"
	"slices"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/tools"
)

// buildRequest assembles the session's next model request: the decisions
// are engine/internal/turn's; this gathers their inputs. It holds the
// session lock only to bring the cached model input up to the history
// (turn.State.Take) and to keep what the build computed
// (turn.State.Apply): reading the skills and instruction files, listing
// the tools, expanding skills and any tokenizing happen between, without
// it (docs/lock-order.md).
func (s *Session) buildRequest(ctx context.Context, m Model) (provider.Request, turn.Cost, error) {
	effort := s.st.Header().Effort
	s.mu.Lock()
	d := s.turn.Take(s.history, s.turnBaseLocked())
	opts, offer := s.agent, s.offer
	s.mu.Unlock()
	var expand func(convo.Message) convo.Message
	if d.NamesSkills() {
		have := s.e.skillsIn(s.skillCwd())
		expand = func(m convo.Message) convo.Message { return s.expandSkills(m, have) }
	}
	spec := turn.Spec{
		Model:           m.ID,
		MaxOutputTokens: m.MaxOutputTokens,
		Effort:          effort,
		System:          opts.systemPrompt(turn.SystemPrompt(s.cwd)),
		Tools:           slices.Clip(offer.offered(s.e.builtinTools)),
		CacheKey:        s.id,
	}
	for _, t := range s.mcpTools(ctx) {
		if offer.allows(t.Name) {
			spec.Tools = append(spec.Tools, provider.Tool{Name: t.Name, Description: t.Description, Schema: t.Schema})
		}
	}
	req, cost, u := d.Build(spec, expand)
	s.applyTurn(u)
	return req, cost, ctx.Err()
}

// turnBaseLocked is where the model input starts: after the latest
// checkpoint, if any.
func (s *Session) turnBaseLocked() turn.Base {
	b := turn.Base{ToolOutputMax: s.e.toolOutputMax()}
	if cp := s.checkpointLocked(); cp != nil {
		b.Summary, b.From = cp.Summary, cp.MessageCount
	}
	return b
}

// toolOutputMax is how many bytes of a tool's output the model gets
// (config.json toolOutput.maxBytes); 0: all of it.
func (e *Engine) toolOutputMax() int {
	switch n := e.catalog().config.ToolOutput.MaxBytes; {
	case n < 0:
		return 0
	case n == 0:
		return turn.DefaultToolOutputMax
	default:
		return n
	}
}

// toolOutput is the whole output of the tool result a
// turn.ToolOutputPath names, for read.
func (s *Session) toolOutput(path string) (string, bool) {
	i, ok := turn.ParseToolOutputPath(path)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.history) || s.history[i].Role != convo.RoleToolResult {
		return "", false
	}
	return turn.ToolOutputText(&s.history[i]), true
}

// applyTurn keeps, under the session lock, what a build or a count made
// without it.
func (s *Session) applyTurn(u turn.Update) {
	s.mu.Lock()
	s.turn.Apply(u)
	s.mu.Unlock()
}

// turnSums copies the session's exact running token sums.
func (s *Session) turnSums() turn.Sums {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn.Sums()
}

// exactTokens is the request's token count: what the budget rule compares
// (docs/protocol.md), tokenized without the lock.
func (s *Session) exactTokens(c *turn.Cost) int {
	n, u := c.Exact(&s.e.tokens, s.turnSums())
	s.applyTurn(u)
	return n
}

// checkRequestBudget is checkBudget for a request of the agent loop,
// whose need is its bound, its exact count when the bound is not enough,
// and its answer's maximum.
func (s *Session) checkRequestBudget(m *Model, req *provider.Request, c *turn.Cost) error {
	return s.checkBudget(m, turn.Need{Bound: c.Bound(), Exact: func() int { return s.exactTokens(c) }, MaxOut: req.MaxOutputTokens}, true)
}

// keptTokens is the count of the request a checkpoint ending at cut would
// leave (turn.Cost.Kept).
func (s *Session) keptTokens(c *turn.Cost, cut int) int {
	n, u := c.Kept(&s.e.tokens, s.turnSums(), cut)
	s.applyTurn(u)
	return n
}

// historyTokens is the exact count of hist[from:to] (hist a prefix of the
// history), as a compaction replaces it.
func (s *Session) historyTokens(hist []convo.Message, from, to int) int {
	n, u := turn.HistoryTokens(&s.e.tokens, s.turnSums(), hist, from, to, s.e.toolOutputMax())
	s.applyTurn(u)
	return n
}

// historyView is what a summary copies under the session lock. It
// shares memory with the session: history messages never change once
// appended and the history only grows, so a view stays valid while the
// session goes on; its slice is capped, so appending to it never writes
// into the session's.
type historyView struct {
	msgs []convo.Message
	cp   *checkpoint // the latest checkpoint, nil when there is none
}

func (s *Session) historyViewLocked() historyView {
	return historyView{
		msgs: s.history[:len(s.history):len(s.history)],
		cp:   s.checkpointLocked(),
	}
}

// withContext is the user message u with what the model must learn of the
// session's context before it (turn.ContextChanges): the parts of
// current that differ from the latest in the history. current is
// turn.Context, read without the lock; s.mu is held.
func (s *Session) withContextLocked(u convo.Message, current []convo.Block) convo.Message {
	parts := s.contextSeen.Changes(s.history, current)
	if len(parts) == 0 {
		return u
	}
	u.Content = append(parts, u.Content...)
	return u
}

// currentContext is turn.Context for the session now: it reads the
// project's instructions, so it runs without the lock.
func (s *Session) currentContext() []convo.Block {
	preset := tools.Preset(s.st.Header().Permission)
	return turn.Context(s.cwd, preset, s.e.sandboxPolicy(preset, s.cwd), time.UnixMilli(s.e.now()))
}
