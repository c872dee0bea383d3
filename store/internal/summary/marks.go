package summary

import "sync"

// Marks is what one owner (a store Root) knows of its scopes' summary
// indexes beyond the files: scopes whose index a failed write may have
// left claiming less than a header. Each Root has its own, so two Roots on
// one data root behave as two processes do; a nil *Marks marks nothing.
type Marks struct {
	mu sync.Mutex
	// stale: generation per scope directory; a rebuild that began before
	// the failure leaves the mark in place (rebuild.go).
	stale map[string]uint64
}

// NewMarks returns marks with no scope marked.
func NewMarks() *Marks {
	return &Marks{stale: map[string]uint64{}}
}

// MarkStale records that the index of scope may claim less than a header.
func (m *Marks) MarkStale(scope string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.stale[scope]++
	m.mu.Unlock()
}

// Stale reports whether scope is marked, and the mark's generation.
func (m *Marks) Stale(scope string) (gen uint64, stale bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gen, stale = m.stale[scope]
	return gen, stale
}

// ClearStale ends the mark after a rebuild that saw generation gen (was:
// the scope was marked when the rebuild began).
func (m *Marks) ClearStale(scope string, gen uint64, was bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.stale[scope]; ok && (!was || g == gen) {
		delete(m.stale, scope)
	}
}
