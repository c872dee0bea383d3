package dispatch

import "sync"

// inflight counts the deferred halves of requests, so shutdown can answer
// every request already read. Unlike a sync.WaitGroup it may be waited on
// while the read loop still adds (a WaitGroup's Add from zero must not race
// with Wait), and it refuses new work once closed.
type inflight struct {
	mu      sync.Mutex
	n       int
	closed  bool
	waiters chan struct{} // closed when n drops to zero
}

func (f *inflight) add() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	return true
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.waiters != nil {
		close(f.waiters)
		f.waiters = nil
	}
}

// wait returns once no deferred request is running.
func (f *inflight) wait() {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	if f.waiters == nil {
		f.waiters = make(chan struct{})
	}
	ch := f.waiters
	f.mu.Unlock()
	<-ch
}

// close refuses new deferred work (after exit or a signal).
func (f *inflight) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}
