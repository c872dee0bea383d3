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

// summarize asks the model for a summary of history[prev:cut], folding in
// the previous summary.
func (s *Session) summarize(ctx context.Context, m Model, prov provider.Provider, cut int) (*checkpoint, error) {
	return s.summarizeWithin(ctx, m, prov, cut, maxSummaryTokens)
}

// maxSummaryTokens bounds a summary's length.
const maxSummaryTokens = 8192

// summarizeWithin is summarize with the summary bounded to maxTokens.
func (s *Session) summarizeWithin(ctx context.Context, m Model, prov provider.Provider, cut, maxTokens int) (*checkpoint, error) {
	s.mu.Lock()
	v := s.historyViewLocked()
	s.mu.Unlock()
	// The transcript and its token count are made outside the lock (see
	// historyView for why the shared history is safe to read).
	prev := 0
	var b strings.Builder
	b.WriteString("Write a context summarization checkpoint of the conversation below.\n\n")
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
	v := fit.Decide(cost.Bound(), turn.Counts{
		Exact: func() int { return s.exactTokens(&cost) },
		Kept: func() (int, int, bool) {
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
		cp, err := s.summarizeWithin(ctx, m, prov, v.Cut, v.Room)
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
