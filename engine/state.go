package engine

import (
	"context"
	"sync"
)

// The session's state machine. What decides whether a request may start,
// whether the queue may start its next input and which operation a
// snapshot shows is sessionState; it changes only in the transitions of
// this file, under Session.mu (docs/session-state.md has the whole of it).
//
// The phase is who holds the session:
//
//	          Resume, or the queue starts an input
//	    ┌────────────────────────────────────────────┐
//	    │                                            ▼
//	┌──────┐                                   ┌─────────┐
//	│ idle │                                   │ running │
//	└──────┘                                   └─────────┘
//	 │    ▲                                      ▲     │
//	 │    │ last drain,                  Resume, │     │ the run
//	 │    │ nothing to start          last drain │     │ lets go
//	 │    │                      starts an input │     ▼
//	 │    │                                   ┌──────────┐
//	 │    └───────────────────────────────────┤ settling │
//	 │                                        └──────────┘
//	 │ idle command                              ▲     │
//	 │ admitted                          release │     │ idle command
//	 ▼                                           │     │ admitted
//	┌─────────┐                                  │     │
//	│ command ├──────────────────────────────────┘     │
//	└─────────┘◄───────────────────────────────────────┘
//
//	from             event                                   to
//	idle             the queue starts an input; Resume       running
//	idle, settling   an idle command is admitted             command
//	running          the run lets go (also after a panic)    settling
//	command          release (also after a panic)            settling
//	command          release of a flush after shutdown       idle
//	settling         Resume                                  running
//	settling         the last holder's drain starts an input running
//	settling         the last holder's drain: nothing to do  idle
//
// Settling is the window in which a holder that let go publishes how it
// ended (agent_settled, state, list): snapshots read idle and requests
// are admitted as in idle, but the queue starts nothing until every
// holder that let go has drained, so the next run_accepted comes after
// those events.
//
// Beside the phase: the gate says whether the queue starts inputs by
// itself (an abort pauses it), and closed marks a disposed session, which
// admits nothing and starts nothing while its holder, if any, settles.
//
// Every holder lets go, also when it panics: a run's goroutine settles in
// execute (settleRunPanic), a command's body defers settleCommand, so a
// panic ends that operation with internal_error and the session takes
// work again (settle.go).

// phase is who holds the session.
type phase int

const (
	// phaseIdle: nothing holds the session; the queue may start an input.
	phaseIdle phase = iota
	// phaseRunning: a run (a prompt or a resume) holds it.
	phaseRunning
	// phaseCommand: an idle command holds it (session/compact, flush,
	// set_model, set_title, set_permission, generate_title).
	phaseCommand
	// phaseSettling: nothing holds the session; holders that let go are
	// publishing how they ended, and the queue starts nothing until the
	// last of them has drained, so their settled events come before the
	// next run_accepted. Commands and Resume are admitted as in idle (the
	// operation already reads idle).
	phaseSettling
)

func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "idle"
	case phaseRunning:
		return "running"
	case phaseCommand:
		return "command"
	case phaseSettling:
		return "settling"
	}
	return "phase(?)"
}

// gate says whether the queue starts its inputs by itself. An abort that
// finds a run or a command pauses it (so does Shutdown(Abort)); a prompt
// sent then goes to the front of the queue and opens it, at once on the
// idle or settling session, else once the session is idle (reopening);
// Resume and a steer on the idle or settling session open it too.
type gate int

const (
	// gateOpen: the queue drains whenever the session is idle.
	gateOpen gate = iota
	// gatePaused: an abort stopped a run or a command; queued inputs wait
	// for a prompt, a resume or a steer on the idle session.
	gatePaused
	// gateReopening: paused, and a prompt sent while the stopped work
	// settles waits at the front; once the session is idle the gate opens
	// and that prompt runs first.
	gateReopening
)

func (g gate) String() string {
	switch g {
	case gateOpen:
		return "open"
	case gatePaused:
		return "paused"
	case gateReopening:
		return "reopening"
	}
	return "gate(?)"
}

// sessionState is the state machine's state; see the diagram above.
type sessionState struct {
	phase  phase
	run    *activeRun   // the run holding the session (phaseRunning)
	cmd    *heldCommand // the command holding it (phaseCommand)
	gate   gate
	closed bool // disposed or deleted: admits nothing, starts nothing
	// latest is the latest run until its goroutine has returned, having
	// published everything it settles with: Wait waits for it.
	latest *activeRun
	// settling counts the holders that let go and have not drained yet.
	// The queue starts nothing until the last of them has: a command
	// admitted while a run settles must not start the next input ahead of
	// that run's settled events.
	settling int
	// idle is made by a waiter and closed the next time the session is
	// found idle (signalIdleLocked).
	idle chan struct{}
}

// busy: a run or a command holds the session.
func (st *sessionState) busy() bool { return st.phase == phaseRunning || st.phase == phaseCommand }

// operation is what snapshots show as operation: prompt for a run, the
// command's name, else idle (settling included).
func (st *sessionState) operation() string {
	switch st.phase {
	case phaseRunning:
		return OpPrompt
	case phaseCommand:
		return st.cmd.op
	}
	return OpIdle
}

// Admission --------------------------------------------------------------

// kind is a kind of request that admitLocked decides on.
type kind int

const (
	kindPrompt       kind = iota // session/prompt: joins the queue, so work in progress is no refusal
	kindResume                   // session/resume
	kindCommand                  // set_title, set_permission, generate_title, flush
	kindSavedCommand             // set_model, compact: also refused while a result is unsaved
	kindQueue                    // session/queue actions
	kindMarkRead                 // session/mark_read
	kindLeave                    // a Runtime replacing its current session
	kindDispose                  // Runtime.Dispose
	kindRemove                   // workspace/remove, for each of its live sessions
	kindDelete                   // session/delete
	kindEdit                     // session/edit: an idle command that ends in a prompt
)

func (k kind) String() string {
	return [...]string{"prompt", "resume", "command", "saved command", "queue", "mark_read", "leave", "dispose", "remove", "delete", "edit"}[k]
}

// refusal is one reason admitLocked turns a request away.
type refusal int

const (
	refusedClosed       refusal = iota + 1 // session_not_found
	refusedPendingSave                     // pending_save
	refusedReadOnly                        // session_locked
	refusedReloading                       // busy
	refusedShuttingDown                    // busy
	refusedApproval                        // approval_pending
	refusedBusy                            // busy
	refusedNotResumable                    // not_resumable
)

func (r refusal) String() string {
	return [...]string{"", "closed", "pending save", "read-only", "reloading", "shutting down", "approval", "busy", "not resumable"}[r]
}

// admission lists what each kind checks, in the order it checks them (the
// first that holds is the answer; docs/protocol.md, error codes).
var admission = [...][]refusal{
	kindPrompt:       {refusedClosed, refusedPendingSave, refusedReadOnly, refusedReloading, refusedShuttingDown},
	kindResume:       {refusedClosed, refusedPendingSave, refusedReadOnly, refusedReloading, refusedShuttingDown, refusedApproval, refusedBusy, refusedNotResumable},
	kindCommand:      {refusedClosed, refusedApproval, refusedBusy, refusedReadOnly},
	kindSavedCommand: {refusedClosed, refusedApproval, refusedBusy, refusedPendingSave, refusedReadOnly},
	kindQueue:        {refusedClosed},
	kindMarkRead:     {refusedPendingSave},
	kindLeave:        {refusedPendingSave, refusedApproval, refusedBusy},
	kindDispose:      {refusedPendingSave},
	kindRemove:       {refusedPendingSave},
	kindDelete:       {refusedPendingSave},
	kindEdit:         {refusedClosed, refusedApproval, refusedBusy, refusedPendingSave, refusedReadOnly, refusedReloading, refusedShuttingDown},
}

// admitLocked is the one admission check: every prompt, resume, idle
// command, queue action, mark_read, replacement and disposal asks it
// before it changes anything. It returns the *Error of the first refusal
// that holds, nil when the request may go ahead.
func (s *Session) admitLocked(k kind) error {
	if r := s.refusalLocked(k); r != 0 {
		return s.refusalError(k, r)
	}
	return nil
}

// admit is admitLocked for requests that only ask.
func (s *Session) admit(k kind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitLocked(k)
}

// refusalLocked returns the first refusal of k that holds, 0 for none.
func (s *Session) refusalLocked(k kind) refusal {
	for _, r := range admission[k] {
		if s.refusesLocked(r) {
			return r
		}
	}
	return 0
}

func (s *Session) refusesLocked(r refusal) bool {
	switch r {
	case refusedClosed:
		return s.state.closed
	case refusedPendingSave:
		return s.pending != nil
	case refusedReadOnly:
		return s.st.ReadOnly()
	case refusedReloading:
		return s.e.isReloading()
	case refusedShuttingDown:
		return s.e.isClosed()
	case refusedApproval:
		return len(s.approvals) > 0
	case refusedBusy:
		return s.state.busy()
	case refusedNotResumable:
		return !s.resumableLocked()
	}
	return false
}

// refusalError words refusal r of a request of kind k.
func (s *Session) refusalError(k kind, r refusal) *Error {
	switch r {
	case refusedClosed:
		return errorf(CodeSessionNotFound, "session %s was closed", s.id)
	case refusedPendingSave:
		switch k {
		case kindLeave:
			return errorf(CodePendingSave, "the current session has an unsaved result; flush it first")
		case kindDispose:
			return errorf(CodePendingSave, "the session has an unsaved result; flush it before disposing")
		case kindRemove:
			return errorf(CodePendingSave, "session %s has an unsaved result; flush it before removing the workspace", s.id)
		case kindDelete:
			return errorf(CodePendingSave, "session %s has an unsaved result; flush it before deleting the session", s.id)
		}
		return errorf(CodePendingSave, "the last result is not saved yet; flush the session first")
	case refusedReadOnly:
		return s.readOnlyError()
	case refusedReloading:
		return errorf(CodeBusy, "the configuration is being reloaded")
	case refusedShuttingDown:
		return errorf(CodeBusy, "the server is shutting down")
	case refusedApproval:
		switch k {
		case kindResume:
			return errorf(CodeApprovalPending, "an approval is waiting")
		case kindLeave:
			return errorf(CodeApprovalPending, "the current session waits for an approval")
		}
		return errorf(CodeApprovalPending, "an approval is waiting; answer it or abort first")
	case refusedBusy:
		if k == kindLeave {
			return errorf(CodeBusy, "the current session is busy (%s)", s.state.operation())
		}
		return errorf(CodeBusy, "session is busy (%s)", s.state.operation())
	case refusedNotResumable:
		return errorf(CodeNotResumable, "nothing was stopped: the last run completed")
	}
	return errorf(CodeInternal, "refused (%v)", r)
}

// resumableLocked is canResume: nothing holds the session, the result is
// saved, and the history ends in work the model did not finish, or holds
// a run recovered from a crashed process (engine/journal.go).
func (s *Session) resumableLocked() bool {
	return !s.state.busy() && s.pending == nil && (resumableHistory(s.history) || s.st.RecoveredRun() != nil) && countUsers(s.history) > 0
}

// queueMayStartLocked is the one list of what keeps the queue from
// starting an input: anything holding or settling, a closed gate or
// session, an unsaved result, a waiting approval, a read-only session, a
// config reload.
func (s *Session) queueMayStartLocked() bool {
	return s.state.phase == phaseIdle && s.state.gate == gateOpen && !s.state.closed &&
		s.pending == nil && len(s.approvals) == 0 && !s.st.ReadOnly() && !s.e.isReloading()
}

// Transitions ------------------------------------------------------------

// startRunLocked: idle or settling → running. Resume was admitted, or the
// queue picked the input (dispatchLocked).
func (s *Session) startRunLocked(r *activeRun) {
	s.state.phase, s.state.run, s.state.cmd, s.state.latest = phaseRunning, r, nil, r
}

// owed is a holder's drain: owed from the moment it lets go until its
// drain has run, once.
type owed struct{ released, drained bool }

// releaseRunLocked: running → settling. The run's live view (the
// streaming reply, the tool statuses) ends with it. The caller publishes
// the settled events, then calls drainAfter(&r.owed). A second call does
// nothing.
func (s *Session) releaseRunLocked(r *activeRun) {
	if r.released || s.state.run != r {
		return
	}
	r.released = true
	s.state.settling++
	s.state.phase, s.state.run = phaseSettling, nil
	s.streaming, s.draft, s.toolStatus = nil, nil, nil
}

// finishRunLocked: the run's goroutine has published everything; Wait
// stops waiting for it.
func (s *Session) finishRunLocked(r *activeRun) {
	if s.state.latest == r {
		s.state.latest = nil
	}
}

// heldCommand is an idle command holding the session.
type heldCommand struct {
	s      *Session
	op     string
	cancel context.CancelFunc // stops its work (compaction, title); set under s.mu
	done   chan struct{}      // closed when it lets go
	once   sync.Once
	owed
}

// startCommandLocked: idle or settling → command. The caller checked
// admission.
func (s *Session) startCommandLocked(op string) *heldCommand {
	c := &heldCommand{s: s, op: op, done: make(chan struct{})}
	s.state.phase, s.state.cmd = phaseCommand, c
	return c
}

// release: command → settling → (drain) idle or running. It ends what
// the command started beside the phase (its cancel function, the
// compaction start time) and drains the queue. Only the first call (of
// release or releaseQuietly) does anything, so a command may defer it as
// a safety net (settleCommand).
func (c *heldCommand) release() { c.end(true) }

// releaseQuietly: command → idle without draining, for a flush served
// after shutdown: nothing new starts then, so queued inputs stay queued.
func (c *heldCommand) releaseQuietly() { c.end(false) }

func (c *heldCommand) end(drain bool) {
	c.once.Do(func() {
		s := c.s
		s.mu.Lock()
		if c.cancel != nil {
			c.cancel()
		}
		mine := s.state.cmd == c
		if mine {
			s.compactionStartedAt = nil
			s.state.cmd = nil
			c.released = true
			s.state.settling++
			s.state.phase = phaseSettling
		}
		close(c.done)
		if mine && !drain {
			// Drained at once, without starting anything.
			c.drained = true
			s.state.settling--
			if s.state.settling == 0 {
				s.state.phase = phaseIdle
				s.signalIdleLocked()
			}
		}
		s.mu.Unlock()
		if mine && drain {
			s.drainAfter(&c.owed)
		}
	})
}

// drainLocked is the drain a holder owes once it has published how it
// ended: when no other holder still settles, settling → idle, and the
// queue may start its next input (→ running). A second call does nothing.
func (s *Session) drainLocked(o *owed) dispatched {
	if !o.released || o.drained {
		return dispatched{}
	}
	o.drained = true
	if s.state.settling--; s.state.settling > 0 || s.state.phase != phaseSettling {
		// Another holder still settles (its drain decides), or a command
		// or a resume took the session meanwhile (its release will).
		return dispatched{}
	}
	s.state.phase = phaseIdle
	return s.dispatchLocked()
}

// drainAfter runs the holder's drain and carries out what it decided.
func (s *Session) drainAfter(o *owed) {
	s.mu.Lock()
	d := s.drainLocked(o)
	s.mu.Unlock()
	s.carryOut(d)
	s.letGoIfIdle()
}

// closeLocked: the session admits nothing and starts nothing from now on
// (dispose, delete, workspace removal); a holder still settles.
func (s *Session) closeLocked() {
	s.state.closed = true
	s.signalIdleLocked()
}

// pauseLocked closes the gate (an abort that stopped a run or a command,
// Shutdown in Abort mode). A prompt already waiting to run first keeps
// its place.
func (s *Session) pauseLocked() {
	if s.state.gate == gateOpen {
		s.state.gate = gatePaused
	}
}

// reopenLocked opens the gate: a resume, a steer on the idle session.
func (s *Session) reopenLocked() { s.state.gate = gateOpen }

// promptGateLocked is the gate's transition for an arriving prompt, and
// says whether the prompt goes to the front of the queue: on a paused
// queue it runs first, now if nothing holds the session (the gate opens),
// else once the session is idle (gateReopening).
func (s *Session) promptGateLocked() (front bool) {
	switch {
	case s.state.gate == gateOpen:
		return false
	case s.state.busy() || len(s.approvals) > 0:
		s.state.gate = gateReopening
	default:
		s.state.gate = gateOpen
	}
	return true
}

// reopenIfIdleLocked opens a reopening gate once the session is idle.
func (s *Session) reopenIfIdleLocked() {
	if s.state.gate == gateReopening && s.state.phase == phaseIdle {
		s.state.gate = gateOpen
	}
}

// Idle signal ------------------------------------------------------------

// idleLocked returns a channel that is closed the next time the session
// is found idle: when settling ends and the queue starts nothing, when the
// queue is asked and may start nothing, when the session closes. A waiter
// checks its own condition, then waits on it, instead of polling.
func (s *Session) idleLocked() <-chan struct{} {
	if s.state.idle == nil {
		s.state.idle = make(chan struct{})
	}
	return s.state.idle
}

func (s *Session) signalIdleLocked() {
	if s.state.idle != nil {
		close(s.state.idle)
		s.state.idle = nil
	}
}
