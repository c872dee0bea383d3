package engine

import (
	"errors"
	"slices"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// Two terminals, one conversation (docs/cli.md, "Two terminals, one
// conversation"). With Options.LetGoWhenIdle, a session holds its store
// lock only while it has work: a run, a queued input (held ones too), a
// pending save, an approval, a command, a title being made, a queue.json
// or usage not yet written. When the last of those ends it lets go
// (letGoIfIdle), so another process can continue the conversation. Before
// its next write it takes the lock again (relock) and picks up, in place,
// what the other process committed meanwhile: the history's new messages,
// the header (title, usage, model), the timings, a compaction checkpoint,
// the other's request ids, and a run the other left in its journal when it
// died, recovered then; it publishes the state, so that a front end shows
// it. Reading that costs what was added (store.Session.Relock reads only
// the logs' tails).
//
// Session.hold orders the two: a relock and the admission that follows
// it, and a let-go and the check that there is no work, each happen under
// it, so that no request is admitted on a session that lets go of its lock
// under it.

// letGoIfIdle lets go of the session's store lock when the engine lets go
// of idle sessions and this one has no work. It does I/O: call it holding
// no lock.
func (s *Session) letGoIfIdle() { s.letGoAfter(nil) }

// letGoAfter is letGoIfIdle for the background job whose done channel is
// ending: it is finishing, and is no work any more.
func (s *Session) letGoAfter(ending chan struct{}) {
	if !s.e.opts.LetGoWhenIdle {
		return
	}
	s.hold.Lock()
	defer s.hold.Unlock()
	if !s.quiet(ending) {
		return
	}
	// What waits to be written is work too: write it first, and keep the
	// lock if that fails.
	if err := s.saveQueue(s.queueSeq()); err != nil {
		return
	}
	s.mu.Lock()
	unsaved := s.unsaved != (convo.SessionUsage{})
	s.mu.Unlock()
	if unsaved {
		if err := s.saveMeta(nil); err != nil {
			return
		}
	}
	if !s.quiet(ending) {
		return
	}
	if err := s.st.LetGo(); err != nil {
		s.e.log.Warn("letting go of an idle session's lock", "session", s.id, "err", err)
	}
}

// quiet: nothing of the session is under way or waits.
func (s *Session) quiet(ending chan struct{}) bool {
	if s.aux.busy(ending) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.phase == phaseIdle && !s.state.closed && len(s.queue) == 0 && s.pending == nil &&
		len(s.approvals) == 0 && s.next == nil && !s.st.ReadOnly() && s.st.OnDisk()
}

// PickUp takes the session's lock again, when this process let go of it
// while the session was idle (Options.LetGoWhenIdle), and returns the
// messages another process committed meanwhile, with their history index
// from: nothing when none did. A front end calls it before it sends a
// prompt, to show what was said elsewhere; the prompt that follows keeps
// the lock. Another process holding the lock now is session_locked, and
// nothing changes. The session another process made out of date in a way
// that cannot be picked up in place (it rewrote the history) is opened
// again (Runtime.Session follows it); then nothing is returned here.
func (s *Session) PickUp() (msgs []convo.Message, from int, err error) {
	s.hold.Lock()
	msgs, from = s.relock()
	s.hold.Unlock()
	if s.successor() != nil {
		return nil, 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.ReadOnly() {
		return nil, 0, s.readOnlyError()
	}
	return msgs, from, nil
}

// writableHere is nil when this process can write the session now, else
// the error its writes would get (session_locked). A session that let go
// of its lock while idle is not read-only for that: it takes the lock to
// find out (picking up what another process committed), and lets go again.
func (s *Session) writableHere() error {
	if !s.e.opts.LetGoWhenIdle {
		if s.st.ReadOnly() {
			return s.readOnlyError()
		}
		return nil
	}
	if _, _, err := s.PickUp(); err != nil {
		return err
	}
	s.letGoIfIdle()
	return nil
}

// relockForWrite takes the lock again, picking up what another process
// committed, before a write that is not a command (a read receipt, a pin,
// an archive), when this engine lets go of idle sessions; the function it
// returns lets go again once the write is done.
func (s *Session) relockForWrite() (done func()) {
	if !s.e.opts.LetGoWhenIdle {
		return func() {}
	}
	s.hold.Lock()
	s.relock()
	s.hold.Unlock()
	return s.letGoIfIdle
}

// relock gives a read-only session its lock back, in place, before a
// write is admitted; when the session changed meanwhile it is picked up
// (LetGoWhenIdle: pickUp) or opened again (reopen), and this instance
// stays read-only. It returns the messages picked up and the history
// index of the first. It does I/O and publishes: call it holding hold and
// no other lock.
func (s *Session) relock() ([]convo.Message, int) {
	if !s.st.ReadOnly() {
		return nil, 0
	}
	if s.e.opts.LetGoWhenIdle {
		c, err := s.st.Relock()
		switch {
		case errors.Is(err, store.ErrStale):
			s.e.reopen(s)
		case err == nil:
			msgs := s.pickUp(c)
			s.adoptStoredQueue()
			return msgs, c.From
		}
		return nil, 0
	}
	switch err := s.st.TryWritable(); {
	case errors.Is(err, store.ErrStale):
		s.e.reopen(s)
	case err == nil:
		s.adoptStoredQueue()
	}
	return nil, 0
}

// pickUp brings the session's live state up to what its store handle
// picked up from another process (c): the history's new messages, the
// usage ledger, a compaction checkpoint among the new runtime records,
// and publishes it (a recovered run as a recovery is). It costs what was
// added. It returns the new messages (shared: history messages never
// change).
func (s *Session) pickUp(c store.Caught) []convo.Message {
	if !c.Changed {
		return nil
	}
	all := s.st.Messages()
	h := s.st.Header()
	rt := s.st.Runtime()
	s.mu.Lock()
	if len(s.history) != c.From || s.pending != nil {
		// Not the history the store handle had: nothing this instance
		// holds can be trusted to extend. (A pending save keeps its lock,
		// so this does not happen.)
		s.mu.Unlock()
		s.e.log.Warn("picked up a session whose live history differs", "session", s.id, "live", len(s.history), "stored", c.From)
		return nil
	}
	for i := c.From; i < len(all); i++ {
		s.appendLocked(all[i])
	}
	if cp := store.LatestCheckpoint(rt[c.RuntimeFrom:]); cp != nil {
		s.cp = cp
	}
	if h.Usage.Calls > 0 {
		s.usage = h.Usage
		s.usage.Add(s.unsaved)
	}
	added := s.history[c.From:len(all):len(all)]
	if c.Recovered != nil {
		s.recoveryPublished = false
	}
	s.mu.Unlock()
	if c.Recovered != nil {
		s.publishRecovery()
	} else {
		s.publishState()
		s.publishListChange("activity")
	}
	return slices.Clip(added)
}
