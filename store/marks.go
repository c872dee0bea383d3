package store

import "sync"

// scopeMarks is what one Root (and the sessions it opened) knows of its
// scopes' derived indexes beyond the files: scopes whose summary index a
// failed write may have left claiming less than a header, and scopes whose
// search index an append failed to update. Each Root has its own, so two
// Roots on one data root behave as two processes do; a nil *scopeMarks (an
// in-memory session) marks nothing.
type scopeMarks struct {
	mu sync.Mutex
	// summaries: generation per scope directory; a rebuild that began
	// before the failure leaves the mark in place (store/summaries.go).
	summaries map[string]uint64
	// search: scope directories the next search checks against the headers
	// again (store/searchindex.go).
	search map[string]bool
}

func newScopeMarks() *scopeMarks {
	return &scopeMarks{summaries: map[string]uint64{}, search: map[string]bool{}}
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

func (m *scopeMarks) markSearchStale(scopeDir string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.search[scopeDir] = true
	m.mu.Unlock()
}

func (m *scopeMarks) searchStale(scopeDir string) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.search[scopeDir]
}

func (m *scopeMarks) clearSearchStale(scopeDir string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.search, scopeDir)
	m.mu.Unlock()
}
