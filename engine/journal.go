package engine

import (
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// A run's journal (docs/storage.md, "The journal of the run in progress"):
// what a run completes goes to the store's journal as it completes, so
// that a process that dies before the run's commit loses nothing that
// completed; the next open commits it as an interrupted run (store's
// recover.go) and publishes it here. The records are copied under the
// session lock and written after it is let go, by the run's goroutine
// alone: one run writes a session's journal at a time.
//
// A journal that fails (or cannot be started: a full disk) stops taking
// records (store.Journal). The run goes on until it needs the journal: a
// tool never starts unless its start record is durable, so the run then
// ends with the storage error, the calls left get error results, and the
// run is committed as any run's end (or, when that commit is refused too,
// kept as the pending save, and at shutdown in a recovery file). A reply
// without tools needs no journal: it is saved by the commit as before.

// beginJournal starts the run's journal: its prompt as the history holds
// it, context blocks included (user; nil for a resume), at history index
// start. A draft is written to disk first, so that it
// exists for the next process. A failure is kept on the run, whose first
// tool it refuses.
func (s *Session) beginJournal(r *activeRun, spec runSpec, user *convo.Message, start, userIndex int) {
	if s.e.noJournal {
		return
	}
	j, err := s.st.BeginJournal(store.JournalBegin{
		RunID: spec.runID, RequestID: spec.requestID, StartedAt: spec.acceptedAt, MessageCount: start,
		UserMessageIndex: userIndex, User: user, At: s.e.now(),
	})
	if err != nil {
		s.e.log.Warn("run journal not started", "session", s.id, "err", err)
	}
	s.mu.Lock()
	r.journal = j
	if err != nil {
		r.journalErr = storageError(err, "start the run's journal")
	}
	s.mu.Unlock()
}

// journalLocked is the journal of the run that holds the session and the
// run's usage so far; nil when no run does or it has none.
func (s *Session) journalLocked() (*store.Journal, convo.UsageSum) {
	if r := s.state.run; r != nil {
		return r.journal, r.usage
	}
	return nil, convo.UsageSum{}
}

// journalMessage records history message idx, a message the run
// completed, holding no lock. A completed assistant message without tool
// calls is fsynced; one with tool calls is made durable by its first
// tool's start record, which is fsynced before the tool executes (so
// every record before a tool's effect is on disk before the effect, and
// a reply with five calls costs one fsync, not two); a tool result or a
// steering message is made durable by the next fsync. A failure stays in
// the journal, which refuses the run's next tool start.
func (s *Session) journalMessage(j *store.Journal, idx int, m *convo.Message, usage convo.UsageSum) {
	if j == nil {
		return
	}
	// A steering message is fsynced too: the queue.json write that
	// follows drops the input, and must not reach the disk before it.
	durable := m.Role == convo.RoleUser || (m.Role == convo.RoleAssistant && len(toolCalls(*m)) == 0)
	if err := j.Message(idx, m, usage, s.e.now(), durable); err != nil {
		s.e.log.Warn("run journal", "session", s.id, "err", err)
	}
}

// journalToolStart records, durably, that call number call of the
// assistant message at history index idx starts; the tool must not start
// if it fails.
func (s *Session) journalToolStart(idx, call int, id string) error {
	s.mu.Lock()
	j, _ := s.journalLocked()
	var startErr error
	if r := s.state.run; r != nil {
		startErr = r.journalErr
	}
	s.mu.Unlock()
	if startErr != nil {
		return startErr
	}
	if j == nil {
		return nil
	}
	if err := j.ToolStart(idx, call, id, s.e.now()); err != nil {
		return storageError(err, "record the tool call's start in the run's journal")
	}
	return nil
}

// retireJournal empties a committed run's journal. A failure loses
// nothing: the next open sees the run committed (docs/storage.md).
func (s *Session) retireJournal(j *store.Journal) {
	if j == nil {
		return
	}
	if err := j.Retire(); err != nil {
		s.e.log.Warn("run journal not retired", "session", s.id, "err", err)
	}
}

// refuseCalls answers tool calls that did not start because their start
// could not be journaled, so the history stays a valid conversation.
func (s *Session) refuseCalls(runID string, calls []convo.Block, err error) {
	for _, c := range calls {
		s.appendMessage(runID, convo.Message{
			Role: convo.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, IsError: true, Timestamp: s.e.now(),
			Content: []convo.Block{{Type: convo.BlockText, Text: "The tool call did not run: Loop could not record its start (" + err.Error() + ")."}},
		})
	}
}

// RecoveredOnOpen is the run this instance's open recovered from the
// journal of a process that died in it (docs/protocol.md 9.1), nil when
// none: state.recovered says so too, until the next run, also in later
// processes; this says that it happened here.
func (s *Session) RecoveredOnOpen() *store.JournalRecovery { return s.st.Recovered() }

// publishRecovery announces the run the store recovered when it opened
// this session (store.Session.Recovered): its settlement, with outcome
// interrupted, then the session's state and list entry. Once per instance.
func (s *Session) publishRecovery() {
	rec := s.st.Recovered()
	if rec == nil {
		return
	}
	s.mu.Lock()
	done := s.recoveryPublished
	s.recoveryPublished = true
	s.mu.Unlock()
	if done {
		return
	}
	s.e.log.Info("recovered an interrupted run", "session", s.id, "run", rec.RunID, "messages", rec.Messages)
	s.titleRecovered()
	s.e.emit(Event{Kind: EventAgentSettled, SessionID: s.id, Payload: &AgentSettledEvent{
		SessionID: s.id, RunID: rec.RunID, RequestID: rec.RequestID, Outcome: OutcomeInterrupted,
	}})
	s.publishState()
	s.publishListChange("activity")
}

// titleRecovered gives a session still untitled after a recovery the
// fallback title its first run's commit would have given (engine/run.go):
// a crash that cut that run left it untitled in every list. A session
// another process writes keeps its header as it is.
func (s *Session) titleRecovered() {
	if s.st.ReadOnlyReason() != nil || s.st.Header().Title != "" {
		return
	}
	s.mu.Lock()
	text := s.firstTitleSourceLocked()
	s.mu.Unlock()
	title := fallbackTitle(text)
	if title == "" {
		return
	}
	err := s.saveMeta(func(h *store.Header) {
		if h.Title == "" {
			h.Title, h.TitleSource = title, store.TitleAuto
		}
	})
	if err != nil {
		s.e.log.Warn("title of a recovered session", "session", s.id, "err", err)
	}
}
