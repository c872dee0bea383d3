package store

import "sync"

// scopeMarks is what one Root knows of its scopes' summary indexes beyond
// the files: scopes whose index a failed write may have left claiming less
// than a header. Each Root has its own, so two Roots on one data root
// behave as two processes do; a nil *scopeMarks marks nothing.
type scopeMarks struct {
	mu sync.Mutex
	// summaries: generation per scope directory; a rebuild that began
	// before the failure leaves the mark in place (store/summaryrebuild.go).
	summaries map[string]uint64
}

func newScopeMarks() *scopeMarks {
	return &scopeMarks{summaries: map[string]uint64{}}
}

func (m *scopeMarks) markSummariesStale(scope string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.summaries[scope]++
	m.mu.Unlock()
}

func (m *scopeMarks) summariesStale(scope string) (gen uint64, stale bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gen, stale = m.summaries[scope]
	return gen, stale
}

// clearSummariesStale ends the mark after a rebuild that saw generation
// gen (was: the scope was marked when the rebuild began).
func (m *scopeMarks) clearSummariesStale(scope string, gen uint64, was bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.summaries[scope]; ok && (!was || g == gen) {
		delete(m.summaries, scope)
	}
}
