package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/provider"
)

// WrapProvider replaces the client of provider name in e's current catalog
// with wrap(client), so that tests can make a model client fail in ways no
// script can (a panic). It exists only in test builds.
func WrapProvider(e *Engine, name string, wrap func(provider.Provider) provider.Provider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cat := *e.cat
	cat.providers = maps.Clone(e.cat.providers)
	cat.providers[name] = wrap(cat.providers[name])
	e.cat = &cat
}

// DisableJournal turns off the journal of e's runs, for the benchmark that
// measures what it costs (BenchmarkPromptWithTenToolCalls). Call it before
// any run.
func DisableJournal(e *Engine) { e.noJournal = true }

// QueueGate names the session's queue gate (open, paused, reopening).
func QueueGate(s *Session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.gate.String()
}

// SessionPhase names the session's phase (state.go).
func SessionPhase(s *Session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.phase.String()
}

// Invariants checks, under the session's lock, what must hold at every
// instant: the phase agrees with its holder, views of a run exist only
// during it, queue ids are unique and match their deduplication entries.
// quiescent adds what holds whenever no request is half done: an idle
// session with an open gate has nothing in its queue that could start.
func Invariants(s *Session, quiescent bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.state
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if (st.phase == phaseRunning) != (st.run != nil) {
		bad("phase %v, run set %v", st.phase, st.run != nil)
	}
	if (st.phase == phaseCommand) != (st.cmd != nil) {
		bad("phase %v, command set %v", st.phase, st.cmd != nil)
	}
	if st.settling < 0 || (st.phase == phaseSettling) != (st.settling > 0) && st.phase != phaseRunning && st.phase != phaseCommand {
		bad("phase %v with %d holders settling", st.phase, st.settling)
	}
	if st.phase == phaseRunning && st.latest != st.run {
		bad("the running run is not the latest")
	}
	if len(s.approvals) > 0 && st.phase != phaseRunning {
		bad("%d approvals wait in phase %v", len(s.approvals), st.phase)
	}
	if s.pending != nil && st.phase == phaseRunning {
		bad("a run holds the session while a result is unsaved")
	}
	if (s.streaming != nil || len(s.toolStatus) > 0) && st.phase != phaseRunning {
		bad("a run's live view (streaming %v, %d tool statuses) in phase %v", s.streaming != nil, len(s.toolStatus), st.phase)
	}
	if s.compactionStartedAt != nil && (st.phase != phaseCommand || st.cmd.op != OpCompact) {
		bad("compactionStartedAt set in phase %v", st.phase)
	}
	if len(s.dedup.order) != len(s.dedup.byID) || len(s.dedup.order) > dedupSize {
		bad("dedup order %d entries, map %d", len(s.dedup.order), len(s.dedup.byID))
	}
	seen := map[string]bool{}
	for _, id := range s.dedup.order {
		if seen[id] {
			bad("dedup lists %q twice", id)
		}
		seen[id] = true
	}
	ids := map[string]bool{}
	for _, it := range s.queue {
		if ids[it.ID] {
			bad("queue id %q twice", it.ID)
		}
		ids[it.ID] = true
		e, ok := s.dedup.get(it.ID)
		switch {
		case !ok && len(s.dedup.order) < dedupSize:
			bad("queued %q has no dedup entry", it.ID)
		case ok && (e.runID != it.RunID || !e.queued && !it.unsaved):
			// An input still being written has the entry its dispatch is
			// expected to answer (acceptPrompt).
			bad("queued %q (run %s) has dedup entry run %s queued %v", it.ID, it.RunID, e.runID, e.queued)
		}
	}
	if quiescent {
		if st.gate == gateReopening && st.phase == phaseIdle {
			bad("idle with a reopening gate")
		}
		if s.queueMayStartLocked() && slices.ContainsFunc(s.queue, func(it *QueueItem) bool { return !it.Held }) {
			bad("idle with an open gate and a queued input that could start")
		}
	}
	return errors.Join(errs...)
}

// BuildRequestCold builds s's next model request the way the first request
// near the budget after a long session opens does: nothing is cached or
// counted yet, and the whole history is tokenized. The lock benchmark
// repeats it to keep a request build running.
func BuildRequestCold(ctx context.Context, s *Session) error {
	s.mu.Lock()
	m, _, err := s.resolveModelLocked()
	s.turn = turn.State{}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_, cost, err := s.buildRequest(ctx, m)
	if err == nil {
		s.exactTokens(&cost)
	}
	return err
}

// TokenizerLoaded reports whether e has loaded its BPE tokenizer.
func TokenizerLoaded(e *Engine) bool { return e.tokens.Loaded() }

// BuildRequest builds s's next model request as the agent loop would,
// with the request's token bound and, when exact is set, its exact count
// (which loads the tokenizer).
func BuildRequest(ctx context.Context, s *Session, exact bool) (req provider.Request, bound, tokens int, err error) {
	s.mu.Lock()
	m, _, err := s.resolveModelLocked()
	s.mu.Unlock()
	if err != nil {
		return req, 0, 0, err
	}
	req, cost, err := s.buildRequest(ctx, m)
	if err == nil && exact {
		tokens = s.exactTokens(&cost)
	}
	return req, cost.Bound(), tokens, err
}

// BuildRequestFresh is BuildRequest from nothing: s's model input cache,
// token sums and fixed cost set aside, as if no request had been built,
// and put back after. What it returns is what the caches stand for.
func BuildRequestFresh(ctx context.Context, s *Session) (req provider.Request, bound, tokens int, err error) {
	s.mu.Lock()
	kept := s.turn
	s.turn = turn.State{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = kept
		s.mu.Unlock()
	}()
	return BuildRequest(ctx, s, true)
}
