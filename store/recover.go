package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Recovery on open (docs/storage.md, "The journal of the run in
// progress"): a session whose journal holds a run, opened by a process
// that takes its lock (so the journal's writer is gone: a live writer
// holds the lock for as long as it has the session open), gets the run's
// complete records committed as one interrupted run before Open returns.
// No tool runs again and no model is asked: a tool call without a result
// gets an error result saying the run was interrupted.

// The texts of the error results a recovery gives the calls a crash left
// without a result: the model reads them when the run is resumed.
const (
	InterruptedStartedText = "The run was interrupted (Loop stopped) while this tool call was running; its effect is unknown. Check before relying on it or running it again."
	InterruptedUnrunText   = "The run was interrupted (Loop stopped) before this tool call started; it did not run."
)

// JournalRecovery is what an open recovered from a crashed process's journal.
type JournalRecovery struct {
	RunID     string
	RequestID string
	// Messages is the number of messages committed, the error results
	// added for unanswered tool calls included; MessageStart is the first
	// one's history index.
	Messages     int
	MessageStart int
	// InterruptedAt is the Unix ms of the journal's last complete record.
	InterruptedAt int64
	// TimingIndex is the recovered run's prompt timing's index.
	TimingIndex int
	// Unread: the recovered run holds new output.
	Unread bool
}

// Recovered returns what this handle's open recovered, or nil.
func (s *Session) Recovered() *JournalRecovery {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recovered == nil {
		return nil
	}
	r := *s.recovered
	return &r
}

// RecoveredRun is the header's recovered member: the run the latest
// recovery on open committed, until the next run's commit; nil when none.
func (s *Session) RecoveredRun() *RecoveredRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clonePtr(s.hdr.Recovered)
}

// recoverJournal commits what the journal holds, if anything, and retires
// it. Call it from openDir on a writable session. An error means the
// journal cannot be applied (malformed, or not a continuation of the
// committed history): the caller opens the session read-only.
func (s *Session) recoverJournal() error {
	path := filepath.Join(s.dir, journalFile)
	data, err := s.fs.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fsys.PathError("read", path, err)
	case len(data) == 0:
		return nil
	}
	run, err := parseJournal(data, path, s.id)
	if err != nil {
		return err
	}
	if run != nil && !s.committedRun(run.begin.RunID) && !s.holdsAll(run) {
		if err := s.commitRecovered(run, path); err != nil {
			return err
		}
	}
	// A retire that fails leaves a journal whose run the timings now
	// hold: the next open retires it, and the next run's BeginJournal
	// truncates it, so the session stays writable.
	_ = s.retireJournalFile(path)
	return nil
}

// committedRun reports whether a committed prompt timing has the run id:
// the run was committed and only its journal's retire was lost.
func (s *Session) committedRun(runID string) bool {
	for i := range s.timings {
		if s.timings[i].ID == runID {
			return true
		}
	}
	return false
}

// holdsAll reports whether the committed history holds every message of
// the run: nothing to recover (a run saved by a flush, whose commit writes
// no timing, or a compaction checkpoint just before the crash).
func (s *Session) holdsAll(run *journalRun) bool {
	end := run.base() + len(run.msgs)
	if len(run.msgs) == 0 {
		return true
	}
	return end <= len(s.msgs) && sameMessage(&run.msgs[len(run.msgs)-1], &s.msgs[end-1])
}

// commitRecovered commits the journal's messages the history lacks as one
// interrupted run.
func (s *Session) commitRecovered(run *journalRun, path string) error {
	if err := s.continues(run, path); err != nil {
		return err
	}
	n, base := len(s.msgs), run.base()
	add := append([]convo.Message(nil), run.msgs[n-base:]...)
	add = append(add, interruptedResults(run)...)
	var saved convo.UsageSum
	if n > base {
		saved = run.usage[n-1-base]
	}
	total := run.usage[len(run.usage)-1]
	unread := false
	for i := range add {
		if add[i].Role == convo.RoleAssistant && len(add[i].Content) > 0 {
			unread = true
		}
	}
	end := n + len(add)
	timing := PromptTiming{
		ID: run.begin.RunID, UserMessageIndex: *run.begin.UserMessageIndex, MessageStartIndex: Some(base),
		MessageEndIndex: Some(end), StartedAt: run.begin.StartedAt, FinishedAt: Some(run.last),
		Usage: total, Interrupted: true,
	}
	rec := &JournalRecovery{
		RunID: run.begin.RunID, RequestID: run.begin.RequestID, Messages: len(add), MessageStart: n,
		InterruptedAt: run.last, TimingIndex: len(s.timings), Unread: unread,
	}
	all := append(s.msgs[:n:n], add...)
	before := s.hdr.UpdatedAt
	err := s.Commit(all, nil, func(h *Header) {
		// The run's activity ended at its last record, not now.
		h.UpdatedAt = max(before, run.last)
		if unread {
			h.Unread = true
		}
		h.Recovered = &RecoveredRun{RunID: rec.RunID, Messages: rec.Messages, InterruptedAt: rec.InterruptedAt}
		h.Usage.UsageSum.Add(subUsage(total, saved))
	}, TimingAt{Index: rec.TimingIndex, Timing: timing})
	if err != nil {
		return fmt.Errorf("recover the interrupted run of %s: %w", path, err)
	}
	s.mu.Lock()
	s.recovered = rec
	s.mu.Unlock()
	return nil
}

// continues checks that the journal's run continues the committed
// history: it began where the history ended, or a compaction checkpoint
// in the run committed its first messages, which the history must then
// end with.
func (s *Session) continues(run *journalRun, path string) error {
	n, base := len(s.msgs), run.base()
	if n < base || n > base+len(run.msgs) {
		return malformed(path, "its run begins at history index %d and holds %d messages, the history holds %d: not the run in progress", base, len(run.msgs), n)
	}
	if n > base && !sameMessage(&run.msgs[n-1-base], &s.msgs[n-1]) {
		return malformed(path, "its message %d differs from the committed one", n-1)
	}
	return nil
}

// interruptedResults answers the tool calls of the run's last assistant
// message that have no result among the messages after it, by call id.
func interruptedResults(run *journalRun) []convo.Message {
	last := -1
	for i := len(run.msgs) - 1; i >= 0; i-- {
		if run.msgs[i].Role == convo.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	calls := toolCallsOf(&run.msgs[last])
	// Matched by call id, not by count: the results need not come in
	// the calls' order.
	answered := map[string]bool{}
	for _, m := range run.msgs[last+1:] {
		if m.Role == convo.RoleToolResult {
			answered[m.ToolCallID] = true
		}
	}
	var out []convo.Message
	for k := range calls {
		if answered[calls[k].ID] {
			continue
		}
		text := InterruptedUnrunText
		if run.started[[2]int{run.base() + last, k}] {
			text = InterruptedStartedText
		}
		out = append(out, convo.Message{
			Role: convo.RoleToolResult, ToolCallID: calls[k].ID, ToolName: calls[k].Name, IsError: true,
			Timestamp: run.last, Content: []convo.Block{{Type: convo.BlockText, Text: text}},
		})
	}
	return out
}

// retireJournalFile empties the journal file at path.
func (s *Session) retireJournalFile(path string) error {
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fsys.PathError("open", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return fsys.PathError("truncate", path, err)
	}
	return f.Close()
}

// journalWaiting reports whether the session's journal holds a run (or
// cannot be read), for a read-only handle taking the lock again
// (relock.go): a crashed writer's run is recovered by opening the session
// again, never by a handle that read the history before it.
func (s *Session) journalWaiting() error {
	path := filepath.Join(s.dir, journalFile)
	data, err := s.fs.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fsys.PathError("read", path, err)
	case len(data) == 0:
		return nil
	}
	run, err := parseJournal(data, path, s.id)
	if err == nil && run != nil && !s.committedRun(run.begin.RunID) && !s.holdsAll(run) {
		err = s.continues(run, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	return fmt.Errorf("%w: %w: %s holds an interrupted run", ErrSessionLocked, ErrStale, path)
}
