package engine

import (
	"context"
	"sync"

	"github.com/loopdev/loop/convo"
)

// auxWork tracks background work beside runs (title generation), so abort,
// disposal and config reload can cancel and drain it. One job at a time: a
// new job cancels the previous one and starts after it has finished, so
// waiting for the latest job waits for all.
type auxWork struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{} // closed when the latest job has finished
	// ended runs as each job finishes, its done channel still open (the
	// session lets go of an idle lock: letgo.go); set before the first
	// job.
	ended func(done chan struct{})
}

func (a *auxWork) start(fn func(ctx context.Context)) {
	a.mu.Lock()
	if a.cancel != nil {
		a.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	prev, done := a.done, make(chan struct{})
	a.cancel, a.done = cancel, done
	a.mu.Unlock()
	ended := a.ended
	go func() {
		// Last, after ended: a waiter (WaitForTitle) then finds the
		// session's lock let go.
		defer close(done)
		defer func() {
			if ended != nil {
				ended(done)
			}
		}()
		defer cancel()
		if prev != nil {
			<-prev
		}
		fn(ctx)
	}()
}

// busy: the latest job has not finished; ending is a job that is
// finishing (its ended hook runs), which does not count.
func (a *auxWork) busy(ending chan struct{}) bool {
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	if done == nil || done == ending {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// stop cancels background work and waits for it to finish.
func (a *auxWork) stop() {
	a.cancelNow()
	a.wait()
}

// cancelNow cancels background work without waiting for it.
func (a *auxWork) cancelNow() {
	a.mu.Lock()
	if a.cancel != nil {
		a.cancel()
	}
	a.mu.Unlock()
}

// wait lets background work finish on its own.
func (a *auxWork) wait() {
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (s *Session) cancelTitleWork() { s.aux.stop() }
func (s *Session) cancelAuxiliary() { s.aux.stop() }

// WaitForTitle lets a running title generation finish (docs/sdk.md,
// "Titles": call it before disposal to keep generated titles).
func (s *Session) WaitForTitle() { s.aux.wait() }

// startTitle generates a title from the first user message in the
// background; see title.go. then runs once the title is done (at once
// when none is made).
func (s *Session) startTitle(user *convo.Message, then func()) {
	if !s.e.titlesEnabled() {
		then()
		return
	}
	text := titleSource(user)
	s.mu.Lock()
	m, _, err := s.resolveModelLocked()
	s.mu.Unlock()
	if text == "" || err == nil && !s.e.providerTitles(m.Provider) {
		// No title to wait for: then runs now, in order with what the
		// run does next.
		then()
		return
	}
	s.aux.start(func(ctx context.Context) {
		defer then()
		// Background work has no caller to answer: a panic would end the
		// process, so it becomes the title's error.
		defer func() {
			if p := recover(); p != nil {
				why := s.panicError("title generation", p).Error()
				s.mu.Lock()
				s.titleError = &why
				s.mu.Unlock()
				s.publishState()
			}
		}()
		s.generateTitle(ctx, text, false)
	})
}
