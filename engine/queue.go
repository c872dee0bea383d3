package engine

import (
	"slices"
)

// QueueItem is an input waiting behind the active run. Its id is the
// requestId it was submitted with.
type QueueItem struct {
	ID       string
	RunID    string
	Text     string
	Images   []Image
	Files    []File
	Skills   []string
	Held     bool   // begin-edit holds it; the scheduler skips it
	HoldID   string // names the hold; edit and cancel-edit may quote it
	Steer    bool   // deliver at the next safe boundary of the running turn
	QueuedAt int64

	// overtaken: a later item was dispatched while this one was held, so a
	// saved edit goes to the tail.
	overtaken bool
	// approver answers the approvals of the run the item starts: the
	// connection that submitted it (PromptInput.Approver).
	approver Approver
	// unsaved: the prompt that queued it waits for queue.json to hold it
	// (Session.Prompt); until then no client sees it and nothing starts
	// it or anything behind it.
	unsaved bool
	// front: an edit's prompt, which the edit's release starts first
	// (Session.Edit).
	front bool
}

// Queue actions (docs/protocol.md 8.2).
const (
	QueueEdit       = "edit"
	QueueMove       = "move"
	QueueDelete     = "delete"
	QueueSteer      = "steer"
	QueueBeginEdit  = "begin-edit"
	QueueCancelEdit = "cancel-edit"
)

// QueueAction is one session/queue request.
type QueueAction struct {
	ID       string
	Action   string
	Text     *string
	Images   []Image // nil: keep; empty: remove
	Files    []File
	Skills   []string
	BeforeID *string
	HoldID   string
}

func cloneItem(it *QueueItem) QueueItem {
	cp := *it
	cp.approver = nil // the caller's copy names no connection
	cp.Images = slices.Clone(it.Images)
	cp.Files = slices.Clone(it.Files)
	cp.Skills = slices.Clone(it.Skills)
	if cp.Images == nil {
		cp.Images = []Image{}
	}
	if cp.Files == nil {
		cp.Files = []File{}
	}
	if cp.Skills == nil {
		cp.Skills = []string{}
	}
	return cp
}

func (s *Session) queueView() []QueueItem {
	out := make([]QueueItem, 0, len(s.queue))
	for _, it := range s.queue {
		if !it.unsaved {
			out = append(out, cloneItem(it))
		}
	}
	return out
}

func (s *Session) hasQueue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > 0
}

func (s *Session) publishQueue() {
	s.e.emitWith(s.id, func() Event {
		s.mu.Lock()
		q := s.queueView()
		s.mu.Unlock()
		return Event{Kind: EventQueueChanged, SessionID: s.id, Payload: &QueueChangedEvent{SessionID: s.id, Queue: q}}
	})
}

func (s *Session) findItem(id string) int {
	return slices.IndexFunc(s.queue, func(it *QueueItem) bool { return it.ID == id })
}

// Queue applies one action. begin-edit returns the held item; the other
// actions return nil and the caller reads the snapshot.
func (s *Session) Queue(a QueueAction) (*QueueItem, error) {
	var have []Skill
	if a.Action == QueueEdit {
		// An edit checks the item's skills; the folders are read before
		// the lock.
		have = s.e.skillsIn(s.skillCwd())
	}
	held, dispatch, err := s.queueAction(a, have)
	if err != nil {
		return nil, err
	}
	// Every action but a hold's changes queue.json; a failed write is
	// logged, and the change stands (docs/protocol.md 8.6).
	if a.Action != QueueBeginEdit && a.Action != QueueCancelEdit {
		s.saveQueueLogged(s.queueSeq(), a.Action)
	}
	s.publishQueue()
	if dispatch {
		s.maybeDrainQueue()
	}
	return held, nil
}

// queueAction changes the queue under the lock. dispatch says that an
// item may have become startable (released from a hold, steered).
func (s *Session) queueAction(a QueueAction, have []Skill) (held *QueueItem, dispatch bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(kindQueue); err != nil {
		return nil, false, err
	}
	i := s.findItem(a.ID)
	// An input still being written (unsaved) is not in the queue any
	// client has seen: acting on it would publish a change to an item
	// nobody saw, and its answer would then be queued for nothing.
	if i < 0 || s.queue[i].unsaved {
		return nil, false, errorf(CodeQueueItemMissing, "no queued item %q (it may have been sent already)", a.ID)
	}
	it := s.queue[i]
	if a.Action != QueueBeginEdit && a.Action != QueueCancelEdit {
		// queue.json holds the content, the order and the steer marks;
		// counted also when the action is then refused, which writes the
		// same state again at worst.
		s.queueChangedLocked()
	}
	switch a.Action {
	case QueueEdit:
		released, err := s.editItemLocked(i, a, have)
		return nil, released, err
	case QueueMove:
		return nil, false, s.moveItemLocked(i, a)
	case QueueDelete:
		s.queue = slices.Delete(s.queue, i, i+1)
		return nil, false, nil
	case QueueSteer:
		if it.Held {
			return nil, false, errorf(CodeQueueConflict, "item %q is being edited", a.ID)
		}
		it.Steer = true
		// An idle session has no turn to steer: the item is sent now.
		if !s.state.busy() {
			s.reopenLocked()
			s.queue = slices.Delete(s.queue, i, i+1)
			s.queue = slices.Insert(s.queue, 0, it)
		}
		return nil, true, nil
	case QueueBeginEdit:
		if it.Held {
			return nil, false, errorf(CodeQueueConflict, "item %q is already being edited", a.ID)
		}
		it.Held, it.HoldID, it.overtaken = true, newID(), false
		cp := cloneItem(it)
		return &cp, false, nil
	case QueueCancelEdit:
		if !it.Held {
			return nil, false, errorf(CodeQueueConflict, "item %q is not being edited", a.ID)
		}
		if a.HoldID != "" && a.HoldID != it.HoldID {
			return nil, false, errorf(CodeQueueConflict, "item %q is being edited elsewhere", a.ID)
		}
		it.Held, it.HoldID, it.overtaken = false, "", false
		return nil, true, nil
	}
	return nil, false, errorf(CodeInvalidParams, "unknown queue action %q", a.Action)
}

// editItemLocked replaces the content of item i; saving a held item
// releases its hold (to the tail when a later item overtook it).
func (s *Session) editItemLocked(i int, a QueueAction, have []Skill) (released bool, err error) {
	it := s.queue[i]
	if it.Held && a.HoldID != "" && a.HoldID != it.HoldID {
		return false, errorf(CodeQueueConflict, "item %q is being edited elsewhere", a.ID)
	}
	text := it.Text
	if a.Text != nil {
		text = *a.Text
	}
	images, files, skills := it.Images, it.Files, it.Skills
	if a.Images != nil {
		images = a.Images
	}
	if a.Files != nil {
		files = a.Files
	}
	if a.Skills != nil {
		skills = a.Skills
	}
	if err := validateContent(text, images, files, skills); err != nil {
		return false, err
	}
	if err := checkSkillsIn(have, skills); err != nil {
		return false, err
	}
	if len(images) > 0 {
		if m, _, err := s.resolveModelLocked(); err == nil && !m.Images {
			return false, errorf(CodeModelImagesUnsupported, "model %s/%s does not accept images", m.Provider, m.ID)
		}
	}
	it.Text, it.Images, it.Files, it.Skills = text, slices.Clone(images), slices.Clone(files), slices.Clone(skills)
	if it.Held {
		it.Held, it.HoldID = false, ""
		if it.overtaken {
			s.queue = slices.Delete(s.queue, i, i+1)
			s.queue = append(s.queue, it)
		}
		it.overtaken = false
		released = true
	}
	return released, nil
}

// moveItemLocked moves item i before a.BeforeID, or to the tail.
func (s *Session) moveItemLocked(i int, a QueueAction) error {
	it := s.queue[i]
	if it.Held {
		return errorf(CodeQueueConflict, "item %q is being edited; its position is reserved", a.ID)
	}
	if a.BeforeID != nil && *a.BeforeID == a.ID {
		return errorf(CodeQueueConflict, "an item cannot move before itself")
	}
	j := len(s.queue) - 1
	if a.BeforeID != nil {
		if j = s.findItem(*a.BeforeID); j < 0 {
			return errorf(CodeQueueItemMissing, "no queued item %q to move before", *a.BeforeID)
		}
		if j > i {
			j-- // its index once the item has left its place
		}
	}
	s.queue = slices.Delete(s.queue, i, i+1)
	s.queue = slices.Insert(s.queue, j, it)
	return nil
}

// deliverSteering moves steer-marked items into the running turn as user
// messages, at a boundary between tool calls and the next model request.
func (s *Session) deliverSteering(runID string) {
	s.mu.Lock()
	var take []*QueueItem
	rest := s.queue[:0:0]
	for _, it := range s.queue {
		if it.Steer && !it.Held && !it.unsaved {
			take = append(take, it)
		} else {
			rest = append(rest, it)
		}
	}
	if len(take) == 0 {
		s.mu.Unlock()
		return
	}
	s.queue = rest
	if r := s.state.run; r != nil {
		r.steered = append(r.steered, take...)
	}
	seq := s.queueChangedLocked()
	s.mu.Unlock()
	s.publishQueue()
	for _, it := range take {
		m := userMessage(it.ID, it.Text, it.Images, it.Files, it.Skills, s.e.now())
		s.e.emit(Event{Kind: EventRunAccepted, SessionID: s.id, Payload: &RunAcceptedEvent{
			SessionID: s.id, RunID: it.RunID, RequestID: it.ID, SteeredInto: runID,
		}})
		s.appendMessage(runID, m)
	}
	// The inputs are in the run's history now: queue.json drops them.
	s.saveQueueLogged(seq, "steering")
}

// maybeDrainQueue starts the next queued input if the session is idle
// and nothing blocks a run (queueMayStartLocked); while a holder settles
// it leaves the queue to that holder's drain.
func (s *Session) maybeDrainQueue() {
	s.mu.Lock()
	d := s.dispatchLocked()
	s.mu.Unlock()
	s.carryOut(d)
}

// dispatched is what dispatchLocked decided, carried out after unlocking.
type dispatched struct {
	queueChanged bool
	// seq is the state of queue.json that carryOut writes (0: nothing to
	// write): inputs that could not start, a prompt whose answer changed.
	seq     uint64
	failed  []failedItem
	started *QueueItem
	start   func()
}

// failedItem is a queued input that could not start: its model is gone.
type failedItem struct {
	item *QueueItem
	err  error
}

// dispatchLocked is the one place that decides which input runs next: the
// first queued item that is not held, once the session is idle and nothing
// blocks a run (queueMayStartLocked). Prompt adds its input to the queue
// and calls it; every holder's drain calls it when settling ends
// (drainLocked). Both decide under s.mu, so an input never starts ahead of
// one accepted before it. While a holder settles nothing is dispatched:
// the drain comes after the holder's settled events, and inputs that
// arrive meanwhile queue behind those already waiting. When it leaves the
// session idle, waiters for idle are told (signalIdleLocked).
func (s *Session) dispatchLocked() (d dispatched) {
	if s.state.phase != phaseIdle {
		return d
	}
	s.reopenIfIdleLocked()
	for {
		if !s.queueMayStartLocked() {
			s.signalIdleLocked()
			return d
		}
		i := slices.IndexFunc(s.queue, func(it *QueueItem) bool { return !it.Held })
		if i < 0 {
			s.signalIdleLocked()
			return d
		}
		it := s.queue[i]
		if it.unsaved {
			// Its prompt dispatches once queue.json holds it.
			return d
		}
		for _, earlier := range s.queue[:i] {
			earlier.overtaken = true
		}
		s.queue = slices.Delete(s.queue, i, i+1)
		d.queueChanged = true
		// A start is not counted as a change of queue.json: the file keeps
		// the input until its next write, and a process that opens the
		// session drops it then if its run is in the history, or gives it
		// back held if the run was lost (restoreQueueLocked). That saves a
		// write per prompt, and loses nothing a crash could take.
		if _, _, err := s.resolveModelLocked(); err != nil {
			// Preflight failed: nothing is stored, and the request id is
			// forgotten so the same input can be sent again once fixed.
			s.dedup.forget(it.ID)
			d.seq = s.queueChangedLocked()
			d.failed = append(d.failed, failedItem{it, err})
			continue
		}
		d.started = it
		d.start = s.beginRunLocked(runSpec{runID: it.RunID, requestID: it.ID, input: it, approver: it.approver, acceptedAt: s.e.now()})
		return d
	}
}

// carryOut publishes what dispatchLocked decided and starts the run.
func (s *Session) carryOut(d dispatched) {
	if d.queueChanged {
		s.publishQueue()
	}
	for _, f := range d.failed {
		s.e.emit(Event{Kind: EventRunAccepted, SessionID: s.id, Payload: &RunAcceptedEvent{SessionID: s.id, RunID: f.item.RunID, RequestID: f.item.ID}})
		s.e.emit(Event{Kind: EventAgentSettled, SessionID: s.id, Payload: &AgentSettledEvent{
			SessionID: s.id, RunID: f.item.RunID, RequestID: f.item.ID, Outcome: OutcomeError, Error: errorInfo(f.err),
		}})
	}
	if d.start != nil {
		d.start()
	}
	if d.seq > 0 {
		s.saveQueueLogged(d.seq, "dispatch")
	}
}
