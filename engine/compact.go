package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

// checkpoint is an accepted compaction: messages before MessageCount are
// replaced in model input by Summary. The store keeps it (store/checkpoint.go).
type checkpoint = store.Checkpoint

const summarySystem = `You are a context summarization assistant. Summarize the conversation between a user and a coding agent so that the agent can continue the work from the summary alone.`

const summaryTemplate = `Write the summary in this shape:

## Goal
## Constraints
## Progress
## Key Decisions
## Next Steps
## Critical Context
(files, commands, identifiers and exact values the work depends on)`

// Compact summarizes older context under the idle command lock (docs/protocol.md
// `session/compact`); it returns the settled snapshot.
func (s *Session) Compact(ctx context.Context) (*Snapshot, error) {
	finish, err := s.BeginCompact()
	if err != nil {
		return nil, err
	}
	return finish(ctx)
}

// BeginCompact takes the command lock and checks the context and the
// model now, so that commands after it (an abort, a prompt) see the
// compaction and a compaction that cannot run is refused before anything
// starts; finish does the model call and the write and may run elsewhere.
func (s *Session) BeginCompact() (func(context.Context) (*Snapshot, error), error) {
	c, err := s.beginCommand(OpCompact, kindSavedCommand)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cut, ok := s.compactionCutLocked(len(s.history))
	if !ok {
		s.mu.Unlock()
		c.release()
		return nil, errorf(CodeNothingToCompact, "the context is too short to compact")
	}
	m, prov, err := s.resolveModelLocked()
	if err != nil {
		s.mu.Unlock()
		c.release()
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	started := s.e.now()
	s.compactionStartedAt = &started
	c.cancel = cancel
	s.mu.Unlock()
	s.publishState()
	s.traceStep(trace.TypeCompact)
	return func(ctx context.Context) (*Snapshot, error) {
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		return s.finishCompact(cctx, s.endingStep(trace.TypeCompact, c.release), m, prov, cut)
	}, nil
}

// finishCompact asks for the summary and saves the checkpoint. Whatever
// happens, a panic included, the compaction settles: the command lock is
// released and the session is usable again.
func (s *Session) finishCompact(cctx context.Context, release func(), m Model, prov provider.Provider, cut int) (snap *Snapshot, err error) {
	defer s.settleCommand(release, &err)
	var cp *checkpoint
	cp, err = s.summarize(cctx, m, prov, cut)
	if err == nil {
		s.mu.Lock()
		msgs := s.history[:len(s.history):len(s.history)]
		s.mu.Unlock()
		err = s.commitCheckpoint(msgs, cp)
	}
	if err != nil {
		s.saveUsage()
	}
	cancelled := cctx.Err() != nil
	release()
	s.publishState()
	if err != nil {
		if cancelled {
			return nil, errorf(CodeCancelled, "compaction was cancelled")
		}
		return nil, err
	}
	return s.Snapshot(), nil
}

// compactionCutLocked picks where a checkpoint of the first n messages
// ends (turn.CompactionCut).
func (s *Session) compactionCutLocked(n int) (int, bool) {
	prev := 0
	if cp := s.checkpointLocked(); cp != nil {
		prev = cp.MessageCount
	}
	return turn.CompactionCut(s.history[:n], prev)
}

func (s *Session) checkpointLocked() *checkpoint {
	if s.cp == nil {
		s.cp = store.LatestCheckpoint(s.st.Runtime())
		if s.cp == nil {
			s.cp = &checkpoint{}
		}
	}
	if s.cp.Summary == "" {
		return nil
	}
	return s.cp
}

// summarize asks the model for a summary for a checkpoint ending at cut
// (session/compact): with the request the session would send next, and
// its instruction, when that fits the window (turn.Cost.Plan), else with
// a transcript (summarizeTranscript).
func (s *Session) summarize(ctx context.Context, m Model, prov provider.Provider, cut int) (*checkpoint, error) {
	req, cost, err := s.buildRequest(ctx, m)
	if err != nil {
		return nil, err
	}
	limit := m.ContextWindow - s.e.reserveTokens(m)
	if p, ok := s.compactionPlan(&cost, limit, cut); ok && limit-p.Kept >= turn.MinSummaryTokens {
		return s.summarizeRequest(ctx, m, prov, req, &cost, p, limit-p.Kept)
	}
	return s.summarizeTranscript(ctx, m, prov, cut, maxSummaryTokens)
}

// maxSummaryTokens bounds a summary's length.
const maxSummaryTokens = 8192

// summarizeRequest asks for the summary with req, the request the session
// was about to send, cut at p.End and followed by the instruction
// (turn.Cost.SummaryMessages): the provider reads all but the instruction
// from its prompt cache. The answer is bounded to room, and to the
// reserve, so that the request stays inside the window.
func (s *Session) summarizeRequest(ctx context.Context, m Model, prov provider.Provider, req provider.Request, cost *turn.Cost, p turn.Plan, room int) (*checkpoint, error) {
	s.mu.Lock()
	v := s.historyViewLocked()
	s.mu.Unlock()
	prev := 0
	if v.cp != nil {
		prev = v.cp.MessageCount
	}
	before := s.historyTokens(v.msgs, prev, min(p.Cut, len(v.msgs)))
	req.Messages = cost.SummaryMessages(p.End)
	req.MaxOutputTokens = min(m.MaxOutputTokens, maxSummaryTokens, room, s.e.reserveTokens(m))
	req.Purpose = provider.PurposeSummary
	return s.askSummary(ctx, m, prov, req, p.Cut, before)
}

// askSummary sends a summary request and makes its answer a checkpoint
// ending at cut.
func (s *Session) askSummary(ctx context.Context, m Model, prov provider.Provider, req provider.Request, cut, before int) (*checkpoint, error) {
	if err := s.checkBudget(&m, s.simpleNeed(&req), true); err != nil {
		return nil, err
	}
	msg, err := s.stream(ctx, m, prov, req, func(provider.Delta) {})
	if err != nil {
		return nil, wrapError(CodeModelError, err, "compaction summary")
	}
	summary := strings.TrimSpace(msg.Text())
	if summary == "" {
		return nil, errorf(CodeModelError, "the model returned an empty summary")
	}
	return &checkpoint{ID: newID(), Summary: summary, MessageCount: cut, TokensBefore: before, CreatedAt: s.e.now()}, nil
}

// compactionPlan is turn.Cost.Plan for c: a checkpoint at cut (manual
// compaction), or (cut < 0) one keeping about a quarter of limit verbatim.
func (s *Session) compactionPlan(c *turn.Cost, limit, cut int) (turn.Plan, bool) {
	p, u, ok := c.Plan(&s.e.tokens, s.turnSums(), limit, limit/4, cut)
	s.applyTurn(u)
	return p, ok
}

// summarizeTranscript asks for a summary of history[prev:cut] written out
// as one text with its own system prompt, the previous summary folded in:
// for a request too large to carry the instruction as it is. Tool results
// are cut to 2,000 bytes in it, so it needs far less room.
func (s *Session) summarizeTranscript(ctx context.Context, m Model, prov provider.Provider, cut, maxTokens int) (*checkpoint, error) {
	s.mu.Lock()
	v := s.historyViewLocked()
	s.mu.Unlock()
	// The transcript and its token count are made outside the lock (see
	// historyView for why the shared history is safe to read).
	prev := 0
	var b strings.Builder
	b.WriteString("Write a " + turn.SummaryMarker + " of the conversation below.\n\n")
	if v.cp != nil {
		prev = v.cp.MessageCount
		fmt.Fprintf(&b, "<previous-summary>\n%s\n</previous-summary>\n\n", v.cp.Summary)
	}
	b.WriteString("<conversation>\n")
	end := min(cut, len(v.msgs))
	for i := prev; i < end; i++ {
		writeTranscript(&b, &v.msgs[i])
	}
	before := s.historyTokens(v.msgs, prev, end)
	b.WriteString("</conversation>\n\n" + summaryTemplate)
	req := provider.Request{
		Model:           m.ID,
		System:          summarySystem,
		Messages:        []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: b.String()}}}},
		MaxOutputTokens: min(m.MaxOutputTokens, maxSummaryTokens, maxTokens),
		Purpose:         provider.PurposeSummary,
	}
	return s.askSummary(ctx, m, prov, req, cut, before)
}

// writeTranscript renders one message for the summarizer.
func writeTranscript(b *strings.Builder, m *convo.Message) {
	const maxTool = 2000
	switch m.Role {
	case convo.RoleToolResult:
		text := m.Text()
		if len(text) > maxTool {
			text = text[:maxTool] + " [...]"
		}
		fmt.Fprintf(b, "[tool result %s]: %s\n", m.ToolName, text)
		return
	}
	fmt.Fprintf(b, "[%s]: %s\n", m.Role, m.Text())
	for _, blk := range m.Content {
		switch {
		case blk.Type == convo.BlockToolCall:
			fmt.Fprintf(b, "[%s calls %s]: %s\n", m.Role, blk.Name, blk.Arguments)
		case blk.Attachment == "file":
			fmt.Fprintf(b, "[attached file]: %s\n", blk.Text)
		case blk.Type == convo.BlockImage:
			fmt.Fprintf(b, "[image attached]\n")
		}
	}
}

// commitCheckpoint saves history with the checkpoint record and publishes
// its metadata; the checkpoint applies to model input once saved.
func (s *Session) commitCheckpoint(msgs []convo.Message, cp *checkpoint) error {
	edit, done := s.withUsage(nil)
	err := s.st.CommitCheckpoint(msgs, cp, edit)
	done(err)
	if err != nil {
		return storageError(err, "save compaction checkpoint")
	}
	s.mu.Lock()
	s.cp = cp
	s.mu.Unlock()
	return nil
}

// autoCompactionEnabled: on unless config turns it off.
func (e *Engine) autoCompactionEnabled() bool {
	c := e.catalog().config.Compaction
	return c.Enabled == nil || *c.Enabled
}

// reserveTokens is kept free in the window for the answer.
func (e *Engine) reserveTokens(m Model) int {
	return turn.Reserve(e.catalog().config.Compaction.ReserveTokens, m.ContextWindow, m.MaxOutputTokens)
}

// fitRequest checks the request against the model's window before it is
// sent, and compacts first when that makes it fit (turn.Fit.Decide says
// which); a request that does not fit fails with context_budget, with no
// model call.
func (s *Session) fitRequest(ctx context.Context, m Model, prov provider.Provider, req provider.Request, cost turn.Cost) (provider.Request, turn.Cost, error) {
	fit := turn.Fit{Limit: m.ContextWindow - s.e.reserveTokens(m)}
	if cost.Bound() > fit.Limit {
		fit.Auto = s.e.autoCompactionEnabled() // the config is read only when it may matter
	}
	// The plan of a summary request that carries this request itself
	// (End > 0), else of one with a transcript.
	var plan turn.Plan
	v := fit.Decide(cost.Bound(), turn.Counts{
		Exact: func() int { return s.exactTokens(&cost) },
		Kept: func() (int, int, bool) {
			if p, ok := s.compactionPlan(&cost, fit.Limit, -1); ok && fit.Limit-p.Kept >= turn.MinSummaryTokens {
				plan = p
				return p.Cut, p.Kept, true
			}
			s.mu.Lock()
			cut, ok := s.compactionCutLocked(len(cost.Input().History()))
			s.mu.Unlock()
			if !ok {
				return 0, 0, false
			}
			return cut, s.keptTokens(&cost, cut), true
		},
	})
	if v.Compact {
		var cp *checkpoint
		var err error
		if plan.End > 0 {
			cp, err = s.summarizeRequest(ctx, m, prov, req, &cost, plan, v.Room)
		} else {
			cp, err = s.summarizeTranscript(ctx, m, prov, v.Cut, v.Room)
		}
		if err != nil {
			return req, cost, err
		}
		if err := s.commitCheckpoint(cost.Input().History(), cp); err != nil {
			return req, cost, err
		}
		s.publishState()
		req, cost, err = s.buildRequest(ctx, m)
		if err != nil {
			return req, cost, err
		}
		v.Send, v.Tokens = fit.Fits(cost.Bound(), func() int { return s.exactTokens(&cost) })
	}
	if v.Send {
		return req, cost, nil
	}
	return req, cost, errorf(CodeContextBudget, "the request needs about %d tokens; model %s/%s takes %d with %d kept for the answer%s", v.Tokens, m.Provider, m.ID, m.ContextWindow, s.e.reserveTokens(m), v.Why)
}
