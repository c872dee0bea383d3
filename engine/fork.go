package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine/internal/turn"
	"github.com/loopdev/loop/store"
)

// Forks, rewinds and edits (docs/protocol.md, "Forks and rewinds"): each
// is an idle command (busy during a run or another command, pending_save
// while a result is unsaved, approval_pending while an approval waits).
// The store does the work (store/fork.go, store/rewind.go); the engine
// admits it, checks the count and, after a rewind, rebuilds what it
// derived from the history.

// Fork makes a new session whose history is this session's first
// messageCount saved messages, sharing them instead of copying them, with
// this session's settings; title, if not empty, is its title. The new
// session is live and returned. The count must not separate an
// assistant's tool calls from their results (invalid_params).
func (s *Session) Fork(messageCount int, title string) (_ *Session, err error) {
	title = NormalizeTitle(title)
	c, err := s.beginCommand(OpFork, kindSavedCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	if err := s.checkCut(messageCount); err != nil {
		c.release()
		return nil, err
	}
	st, err := s.st.Fork(messageCount, title)
	c.release()
	if err != nil {
		return nil, storageError(err, "fork session "+s.id)
	}
	f := s.e.register(newSession(s.e, st))
	f.publishListChange("fork")
	// As a session opened: a terminal's engine holds no idle session's
	// lock (engine/letgo.go).
	f.letGoIfIdle()
	return f, nil
}

// checkCut checks a messageCount that forks or rewinds the saved history.
func (s *Session) checkCut(messageCount int) error {
	if s.st.IsDraft() || !s.st.Persistent() {
		return errorf(CodeInvalidParams, "session %s is not saved: there is no history to fork or rewind", s.id)
	}
	if err := store.CheckForkPoint(s.st.Messages(), messageCount); err != nil {
		return wrapError(CodeInvalidParams, err, "messageCount")
	}
	return nil
}

// Rewind makes the session continue from its first messageCount saved
// messages: the model's context, the history, the prompt timings, the
// usage totals, unread, the compaction checkpoint and the search index
// follow. What it drops stays readable as a fork, whose id it returns
// with the snapshot, so a rewind can be undone by continuing that fork.
// With files, the workspace's files go back to their state at that point
// first (RestoreFiles without force, under the same command): a file
// changed outside Loop since its checkpoint is files_conflict, and then
// neither the files nor the history change.
func (s *Session) Rewind(ctx context.Context, messageCount int, files bool) (_ *Snapshot, forkID string, err error) {
	c, err := s.beginCommand(OpRewind, kindSavedCommand)
	if err != nil {
		return nil, "", err
	}
	defer s.settleCommand(c.release, &err)
	if files {
		if err := s.restoreForRewind(ctx, messageCount); err != nil {
			c.release()
			return nil, "", err
		}
	}
	forkID, err = s.rewindHeld(messageCount)
	c.release()
	if err != nil {
		return nil, "", err
	}
	s.publishState()
	return s.Snapshot(), forkID, nil
}

// restoreForRewind puts the workspace's files back for a rewind to
// messageCount, while the rewind's command holds the session: the count
// is checked first, so a rewind refused for its count changes no file,
// and files changed outside Loop refuse the whole rewind.
func (s *Session) restoreForRewind(ctx context.Context, messageCount int) error {
	if err := s.checkCut(messageCount); err != nil {
		return err
	}
	if messageCount == len(s.st.Messages()) {
		return errorf(CodeInvalidParams, "messageCount %d is the whole history: nothing to rewind", messageCount)
	}
	res, err := s.restoreFiles(ctx, messageCount, false)
	if err != nil {
		return err
	}
	if len(res.Conflicts) > 0 {
		e := errorf(CodeFilesConflict, "files changed outside Loop since their checkpoint: %s (nothing was changed; put them back with session/restore_files and force, or rewind without files)", strings.Join(res.Conflicts, ", "))
		e.Causes = []error{&FilesConflictError{Paths: res.Conflicts}}
		return e
	}
	return nil
}

// FilesConflictError is the cause of a files_conflict error (errors.As
// finds it): the files changed outside Loop since Loop last left them,
// relative to the session's working directory, as RestoreResult's.
type FilesConflictError struct {
	Paths []string
}

func (e *FilesConflictError) Error() string {
	return "files changed outside Loop since their checkpoint: " + strings.Join(e.Paths, ", ")
}

// rewindHeld rewinds the session while a command holds it, and publishes
// the list changes of the session and of the fork of what it dropped.
func (s *Session) rewindHeld(messageCount int) (string, error) {
	if err := s.checkCut(messageCount); err != nil {
		return "", err
	}
	if messageCount == len(s.st.Messages()) {
		return "", errorf(CodeInvalidParams, "messageCount %d is the whole history: nothing to rewind", messageCount)
	}
	forkID, err := s.st.Rewind(messageCount)
	if err != nil {
		return "", storageError(err, "rewind session "+s.id)
	}
	s.resetHistory()
	s.publishListChange("rewind")
	if h, err := s.e.root.ReadHeader(s.workspaceID, forkID); err == nil {
		sum := Summary{Summary: h.Summary()}
		s.e.emit(Event{Kind: EventSessionsChanged, SessionID: forkID, Payload: &SessionsChangedEvent{
			WorkspaceID: wsPtr(s.workspaceID), SessionID: forkID, Reason: "fork", Summary: &sum,
		}})
	}
	return forkID, nil
}

// resetHistory rebuilds what the session derived from its history after
// the store cut it: the history itself, the tool call ids, the checkpoint,
// the cached model input, the context parts seen and the usage ledger. A
// new instance number tells clients that hold a part of the old history
// (SnapshotSince) to take the new one whole.
func (s *Session) resetHistory() {
	h := s.st.Header()
	history := slices.Clone(s.st.Messages())
	var ids store.ToolCallIDs
	for i := range history {
		ids.Add(&history[i])
	}
	usage, unsaved := openUsage(&h, history, s.e.catalog())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history, s.ids = history, ids
	s.cp = nil
	s.turn = turn.State{}
	s.contextSeen = turn.ContextSeen{}
	s.usage, s.unsaved = usage, unsaved
	s.lastError = nil
	s.instance = sessionInstances.Add(1)
}

// EditResult is what Edit answers: the prompt's answer, and the fork that
// keeps what the edit's rewind dropped.
type EditResult struct {
	PromptResult
	ForkedID string
}

// Edit rewinds the session to just before its userMessageIndex-th user
// message (counted from 0 among the saved user messages) and prompts with
// in, in one admission: nothing else starts in between, and the prompt
// runs first. It answers as Prompt does; a retried requestId answers the
// first attempt without rewinding again. Everything the prompt checks
// (attachments, skills, the model) is checked before the rewind, so a
// refused edit changes nothing.
func (s *Session) Edit(userMessageIndex int, in PromptInput) (_ EditResult, err error) {
	if err := validatePrompt(&in); err != nil {
		return EditResult{}, err
	}
	skillErr := s.checkSkills(in.Skills)
	digest := contentDigest(in.Text, in.Images, in.Files, in.Skills)
	c, first, err := s.admitEdit(&in, digest, skillErr)
	if c == nil {
		// Refused, or a retried request answered with its first answer,
		// its fork included: the relock may have taken the lock for
		// nothing (letgo.go).
		s.letGoIfIdle()
		if err != nil {
			return EditResult{}, err
		}
		return EditResult{PromptResult: first.result(in.RequestID), ForkedID: first.forkedID}, nil
	}
	defer s.settleCommand(c.release, &err)
	k, err := userMessageAt(s.st.Messages(), userMessageIndex)
	if err != nil {
		c.release()
		return EditResult{}, err
	}
	forkID, err := s.rewindHeld(k)
	if err != nil {
		c.release()
		return EditResult{}, err
	}
	// The prompt joins the queue at its front while the command still
	// holds the session, so the command's release starts it before
	// anything else (dispatchLocked).
	in.front = true
	in.forkedID = forkID
	res, err := s.Prompt(in)
	c.release()
	s.publishState()
	if err != nil {
		return EditResult{ForkedID: forkID}, err
	}
	return EditResult{PromptResult: res, ForkedID: forkID}, nil
}

// admitEdit takes the session's lock again and admits the edit as a
// command, under hold: the relock and the admission with no let-go
// between (letgo.go). A retried requestId answers its first attempt
// (first) and admits nothing; so does a refusal (err).
func (s *Session) admitEdit(in *PromptInput, digest string, skillErr error) (_ *heldCommand, first dedupEntry, _ error) {
	s.hold.Lock()
	defer s.hold.Unlock()
	s.relock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if first, found, err := checkDedup(&s.dedup, in.RequestID, digest); found {
		return nil, first, err
	}
	if in.StreamID != nil && *in.StreamID != s.e.streamID {
		return nil, dedupEntry{}, errorf(CodeDeliveryUnknown, "streamId %q is not this server's stream; the edit was not made", *in.StreamID)
	}
	if err := s.admitLocked(kindEdit); err != nil {
		return nil, dedupEntry{}, err
	}
	m, _, err := s.resolveModelLocked()
	if err == nil && len(in.Images) > 0 && !m.Images {
		err = errorf(CodeModelImagesUnsupported, "model %s/%s does not accept images", m.Provider, m.ID)
	}
	if err == nil {
		err = skillErr
	}
	if err != nil {
		return nil, dedupEntry{}, err
	}
	return s.startCommandLocked(OpEdit), dedupEntry{}, nil
}

// userMessageAt is the history index of the n-th user message of msgs.
func userMessageAt(msgs []convo.Message, n int) (int, error) {
	if n >= 0 {
		seen := 0
		for i := range msgs {
			if msgs[i].IsUser() {
				if seen == n {
					return i, nil
				}
				seen++
			}
		}
	}
	return 0, errorf(CodeInvalidParams, "userMessageIndex %d: the session has %d saved user messages", n, countUsers(msgs))
}
