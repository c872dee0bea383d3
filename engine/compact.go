package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/loopdev/loop/convo"
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

// summaryPrefix introduces a checkpoint's summary in model input.
const summaryPrefix = "The earlier part of this conversation was compacted. Summary of it:\n\n"

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

// compactionCutLocked picks where a checkpoint ends: at the last user
// message of the first n, so the latest turn stays verbatim. There must be
// something new to summarize since the previous checkpoint.
func (s *Session) compactionCutLocked(n int) (int, bool) {
	prev := 0
	if cp := s.checkpointLocked(); cp != nil {
		prev = cp.MessageCount
	}
	cut := -1
	for i := n - 1; i > prev; i-- {
		if s.history[i].Role == convo.RoleUser {
			cut = i
			break
		}
	}
	if cut < 0 || cut-prev < 2 {
		return 0, false
	}
	return cut, true
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

// minSummaryTokens is the least room automatic compaction leaves for a
// summary: less would save a checkpoint too short to stand for the
// conversation it replaces.
const minSummaryTokens = 256

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
	before := 0
	for i := prev; i < end; i++ {
		writeTranscript(&b, &v.msgs[i])
		if namesSkills(&v.msgs[i]) {
			before += s.e.tokens.messageTokens(&v.msgs[i]) // the ledger leaves them out
		}
	}
	if prev < end {
		before += s.ledgerTokens(v.msgs, prev, end)
	}
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
	if r := e.catalog().config.Compaction.ReserveTokens; r > 0 {
		return r
	}
	return min(16384, m.ContextWindow/4, m.MaxOutputTokens)
}

// fitRequest checks the request against the model's window before it is
// sent. A request whose upper bound fits is sent without the exact count
// (and without loading the tokenizer); otherwise the exact count decides.
// When automatic compaction is on it compacts first, but only when
// that makes the request fit: the messages a checkpoint keeps (the latest
// user message and what follows it) must leave room for a summary, which
// is then bounded to that room. Otherwise, or when the request still does
// not fit, it fails with context_budget, with no model call.
func (s *Session) fitRequest(ctx context.Context, m Model, prov provider.Provider, req provider.Request, cost requestCost) (provider.Request, requestCost, error) {
	limit := m.ContextWindow - s.e.reserveTokens(m)
	if cost.bound() <= limit {
		return req, cost, nil
	}
	tokens := s.exactTokens(&cost)
	if tokens <= limit {
		return req, cost, nil
	}
	why := ""
	if s.e.autoCompactionEnabled() {
		fixed := s.fixedTokens(&cost)
		in := &cost.in
		s.mu.Lock()
		cut, ok := s.compactionCutLocked(len(in.hist))
		s.mu.Unlock()
		room := 0
		if ok {
			lead := summaryMessage("")
			kept := s.exactInputTokens(in, cut, &lead)
			room = limit - fixed - kept
		}
		switch {
		case ok && room >= minSummaryTokens:
			cp, err := s.summarizeWithin(ctx, m, prov, cut, room)
			if err != nil {
				return req, cost, err
			}
			if err := s.commitCheckpoint(in.hist, cp); err != nil {
				return req, cost, err
			}
			s.publishState()
			req, cost, err = s.buildRequest(ctx, m)
			if err != nil {
				return req, cost, err
			}
			if cost.bound() <= limit {
				return req, cost, nil
			}
			if tokens = s.exactTokens(&cost); tokens <= limit {
				return req, cost, nil
			}
		case ok:
			why = "; compacting the earlier conversation would not make it fit"
		}
	}
	return req, cost, errorf(CodeContextBudget, "the request needs about %d tokens; model %s/%s takes %d with %d kept for the answer%s", tokens, m.Provider, m.ID, m.ContextWindow, s.e.reserveTokens(m), why)
}
