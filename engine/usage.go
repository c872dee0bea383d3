package engine

import (
	"context"
	"errors"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// The usage ledger (docs/protocol.md, "Usage"): every model call a
// session makes is counted once, with its purpose. The session keeps the
// live totals (usage) and the part no committed header holds yet
// (unsaved); every header write (commit, checkpoint, metadata save) adds
// the unsaved part, so a title saved between two runs and the run that
// follows never count a call twice or drop one.

// recordCall enters one call in the ledger (turn.Charge says where). Calls
// of a run also go into the run's prompt timing.
func (s *Session) recordCall(purpose string, m *Model, u *convo.Usage) {
	sum := turn.CallUsage(m.prices(), u)
	d, ofRun := turn.Charge(purpose, sum)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage.Add(d)
	s.unsaved.Add(d)
	if r := s.state.run; r != nil && ofRun {
		r.usage.Add(sum)
	}
}

// stream sends one model request and enters its calls in the ledger: the
// reply's, and those of attempts the provider retried after they had
// reported usage.
func (s *Session) stream(ctx context.Context, m Model, prov provider.Provider, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	req.AttemptUsage = func(u convo.Usage) { s.recordCall(req.Purpose, &m, &u) }
	if req.Purpose != provider.PurposeTitle {
		// Someone waits for this answer: a retry is news (a title's is not).
		req.OnRetry = s.publishRetry
	}
	msg, err := prov.Stream(ctx, req, onDelta)
	if turn.Counted(msg.Usage, err) {
		s.recordCall(req.Purpose, &m, msg.Usage)
	}
	return msg, err
}

// withUsage wraps a header edit so that the write also saves the usage
// the ledger holds unsaved; done puts that usage back when the write
// failed, for the next write to carry.
func (s *Session) withUsage(edit func(*store.Header)) (wrapped func(*store.Header), done func(error)) {
	s.mu.Lock()
	d := s.unsaved
	s.unsaved = convo.SessionUsage{}
	s.mu.Unlock()
	if d == (convo.SessionUsage{}) {
		return edit, func(error) {}
	}
	return func(h *store.Header) {
			if edit != nil {
				edit(h)
			}
			h.Usage.Add(d)
		}, func(err error) {
			if err != nil {
				s.mu.Lock()
				s.unsaved.Add(d)
				s.mu.Unlock()
			}
		}
}

// openUsage is the ledger of a session as it opens (turn.OpenUsage),
// a session written before the ledger priced with cat.
func openUsage(h *store.Header, history []convo.Message, cat *catalog) (total, unsaved convo.SessionUsage) {
	return turn.OpenUsage(h.Usage, history, func(prov, id string) *turn.Prices {
		m, _ := cat.find(ModelRef{Provider: prov, ID: id})
		return m.prices()
	})
}

// prices are m's prices as the usage ledger and the budgets take them;
// nil when config.json has none.
func (m *Model) prices() *turn.Prices { return (*turn.Prices)(m.Cost) }

// publishRetry tells front ends that a model request is sent again after
// a wait (RetryEvent).
func (s *Session) publishRetry(r provider.Retry) {
	s.mu.Lock()
	var runID string
	if s.state.run != nil {
		runID = s.state.run.id
	}
	s.mu.Unlock()
	ev := &RetryEvent{SessionID: s.id, RunID: runID, Attempt: r.Attempt, Of: r.Of, Delay: r.Delay}
	if r.Err != nil {
		ev.Message = r.Err.Error()
	}
	var perr *provider.Error
	if errors.As(r.Err, &perr) {
		ev.Status = perr.Status
	}
	s.e.emit(Event{Kind: EventRetry, SessionID: s.id, Payload: ev})
}
