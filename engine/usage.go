package engine

import (
	"context"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// The usage ledger (docs/protocol.md, "Usage"): every model call a
// session makes is counted once, with its purpose. The session keeps the
// live totals (usage) and the part no committed header holds yet
// (unsaved); every header write (commit, checkpoint, metadata save) adds
// the unsaved part, so a title saved between two runs and the run that
// follows never count a call twice or drop one.

// callUsage is one call's entry: its tokens, and its cost when the model
// has prices.
func callUsage(m *Model, u *convo.Usage) convo.UsageSum {
	sum := convo.UsageSum{Calls: 1}
	if u != nil {
		sum.Input, sum.Output, sum.CacheRead, sum.CacheWrite = u.Input, u.Output, u.CacheRead, u.CacheWrite
		sum.TotalTokens = u.TotalTokens
		if sum.TotalTokens == 0 {
			sum.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
		}
	}
	if p := m.Cost; p != nil {
		sum.Cost = (float64(sum.Input)*p.Input + float64(sum.Output)*p.Output +
			float64(sum.CacheRead)*p.CacheRead + float64(sum.CacheWrite)*p.CacheWrite) / 1e6
	} else {
		sum.Unpriced = 1
	}
	return sum
}

// counted reports whether a call reached the provider as far as the ledger
// can tell: it answered, or it reported usage before it failed. A call
// refused before any response (a refused connection, an HTTP error) cost
// nothing and is not counted.
func counted(u *convo.Usage, err error) bool {
	return err == nil || (u != nil && *u != convo.Usage{})
}

// recordCall enters one call in the ledger. Calls of a run (main turns,
// and compaction summaries while a run holds the session) also go into
// the run's prompt timing; titles never do, since they run beside runs.
func (s *Session) recordCall(purpose string, m *Model, u *convo.Usage) {
	sum := callUsage(m, u)
	d := convo.SessionUsage{UsageSum: sum}
	switch purpose {
	case provider.PurposeTitle:
		d.Title = sum
	case provider.PurposeSummary:
		d.Compaction = sum
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage.Add(d)
	s.unsaved.Add(d)
	if r := s.state.run; r != nil && purpose != provider.PurposeTitle {
		r.usage.Add(sum)
	}
}

// stream sends one model request and enters its calls in the ledger: the
// reply's, and those of attempts the provider retried after they had
// reported usage.
func (s *Session) stream(ctx context.Context, m Model, prov provider.Provider, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	req.AttemptUsage = func(u convo.Usage) { s.recordCall(req.Purpose, &m, &u) }
	msg, err := prov.Stream(ctx, req, onDelta)
	if counted(msg.Usage, err) {
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

// openUsage is the ledger of a session as it opens: the header's totals;
// for a session written before the ledger (no calls in its header), the
// totals of its assistant messages' usage, one call each, priced with
// today's config, to be saved with its next write. Titles and compaction
// summaries of such a session were never recorded.
func openUsage(h *store.Header, history []convo.Message, cat *catalog) (total, unsaved convo.SessionUsage) {
	if h.Usage.Calls > 0 {
		return h.Usage, convo.SessionUsage{}
	}
	var d convo.SessionUsage
	for i := range history {
		msg := &history[i]
		if msg.Role != convo.RoleAssistant || msg.Usage == nil {
			continue
		}
		m, _ := cat.find(ModelRef{Provider: msg.Provider, ID: msg.Model})
		d.Add(convo.SessionUsage{UsageSum: callUsage(&m, msg.Usage)})
	}
	total = h.Usage
	total.Add(d)
	return total, d
}
