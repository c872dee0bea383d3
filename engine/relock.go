package engine

import (
	"errors"

	"github.com/loopdev/loop/store"
)

// A session opened read-only (another process wrote it, or its files could
// not be written: docs/storage.md, Lock) does not stay read-only for the
// life of the process. Its store handle takes the lock again at its next
// write; the engine asks it to before it admits one, and whenever the
// session is opened again (Engine.Session). If another process changed the
// session before it let go, the handle's copy is out of date
// (store.ErrStale): the engine then opens the session again and the new
// instance replaces the old one, which refuses every write from then on
// and points to its successor (Runtime.Session follows it). An engine that
// lets go of idle sessions picks such changes up in place instead
// (letgo.go).

// relocked is s after relock: s itself, or the instance that replaced it.
func (e *Engine) relocked(s *Session) *Session {
	if !s.st.ReadOnly() {
		return s
	}
	if e.opts.LetGoWhenIdle {
		s.hold.Lock()
		s.relock()
		s.hold.Unlock()
		if next := s.successor(); next != nil {
			next.letGoIfIdle()
			return next
		}
		s.letGoIfIdle()
		return s
	}
	switch err := s.st.TryWritable(); {
	case err == nil:
		s.adoptStoredQueue()
		return s
	case !errors.Is(err, store.ErrStale):
		return s
	}
	return e.reopen(s)
}

// reopen replaces s, whose copy of the session another process made out of
// date, by an instance loaded from disk, and returns the instance that
// replaces it (s itself when it could not be loaded, or s is no longer
// the engine's).
func (e *Engine) reopen(s *Session) *Session {
	if next := s.successor(); next != nil {
		return next
	}
	if s.busy() {
		return s
	}
	fresh, err := e.load(s.id)
	if err != nil {
		return s
	}
	// The agent options belong to this process's session, not to its
	// files (agentoptions.go): the instance that replaces it keeps them.
	s.mu.Lock()
	agent, offer := s.agent, s.offer
	s.mu.Unlock()
	fresh.mu.Lock()
	fresh.agent, fresh.offer = agent, offer
	fresh.mu.Unlock()
	e.mu.Lock()
	cur, ok := e.sessions[s.id]
	if ok && cur == s {
		e.sessions[s.id] = fresh
	}
	e.mu.Unlock()
	if !ok || cur != s {
		// Another request replaced it first (or it was closed): this
		// load's handle goes.
		fresh.release()
		if ok {
			return cur
		}
		return s
	}
	s.mu.Lock()
	s.next = fresh
	s.mu.Unlock()
	s.release()
	// Whoever follows the session learns of the history the other process
	// wrote: a new instance's state is sent whole.
	fresh.publishState()
	fresh.publishRecovery()
	return fresh
}

// successor is the instance that replaced s (reopen), nil while s is the
// one.
func (s *Session) successor() *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// release closes the store handle and the trace of an instance that never
// ran anything: a read-only one being replaced.
func (s *Session) release() {
	_ = s.st.Close()
	s.closeGitStore()
	if s.trace != nil {
		s.trace.Close()
	}
}
