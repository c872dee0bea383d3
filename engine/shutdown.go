package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// ShutdownMode says what happens to running work at shutdown.
type ShutdownMode int

const (
	// Drain lets running work and queued inputs finish.
	Drain ShutdownMode = iota
	// Abort stops running work (the partial output is still saved).
	Abort
)

// RecoveryError reports a session whose result could not be saved even at
// shutdown; its snapshot was written to Path instead.
type RecoveryError struct {
	SessionID string
	Path      string
	Err       error
}

func (e *RecoveryError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("session %s: unsaved result lost: %v", e.SessionID, e.Err)
	}
	return fmt.Sprintf("session %s: could not save (%v); its unsaved result is in %s", e.SessionID, e.Err, e.Path)
}

// Shutdown settles every live session: drains or aborts running work,
// retries pending saves, and writes what still cannot be saved to a
// recovery file. The returned error joins *RecoveryError values.
func (e *Engine) Shutdown(ctx context.Context, mode ShutdownMode) error {
	e.mu.Lock()
	e.closed = true
	live := e.liveSessionsLocked()
	e.mu.Unlock()
	if mode == Abort {
		for _, s := range live {
			s.mu.Lock()
			s.pauseLocked()
			s.mu.Unlock()
		}
	}
	for _, s := range live {
		if mode == Abort {
			_, _ = s.Abort(ctx)
		} else {
			_ = s.drain(ctx)
		}
		s.cancelAuxiliary()
	}
	var errs []error
	for _, s := range live {
		if !s.hasPendingSave() {
			continue
		}
		if _, err := s.Flush(); err == nil {
			continue
		}
		if rec := s.recovery(); rec != nil {
			// An earlier Shutdown already wrote this result's file.
			errs = append(errs, rec)
			continue
		}
		msgs, saveErr := s.PendingSave()
		rec := &RecoveryError{SessionID: s.id, Err: saveErr}
		rec.Path, rec.Err = s.writeRecovery(msgs, saveErr)
		s.setRecovery(rec)
		if rec.Path != "" {
			s.wroteRecovery(rec.Path)
			s.retireJournalForRecovery(rec.Path)
		}
		errs = append(errs, rec)
	}
	e.stopMCP("")
	for _, s := range live {
		s.SetMCPServers(nil)
		s.closeUnlessPending()
	}
	e.flushTraces(live)
	return errors.Join(errs...)
}

// Unsaved joins one *RecoveryError for every result that Shutdown could
// not save and that no flush has saved since; nil when there is none.
func (e *Engine) Unsaved() error {
	live := e.LiveSessions()
	slices.SortFunc(live, func(a, b *Session) int { return strings.Compare(a.id, b.id) })
	var errs []error
	for _, s := range live {
		if rec := s.recovery(); rec != nil {
			errs = append(errs, rec)
		}
	}
	return errors.Join(errs...)
}

// recovery is (a copy of) the recovery file Shutdown wrote for the pending
// save, if it wrote one.
func (s *Session) recovery() *RecoveryError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return nil
	}
	return clonePtr(s.pending.recovery)
}

// setRecovery keeps its own copy: a successful flush removes the file it
// names, whatever a host does with the error it was given.
func (s *Session) setRecovery(rec *RecoveryError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != nil {
		s.pending.recovery = clonePtr(rec)
	}
}

// closeUnlessPending releases the store at shutdown, except while a result
// waits to be saved: session/flush is still served after shutdown
// (docs/protocol.md 2.6), and it closes the store once the save succeeds.
func (s *Session) closeUnlessPending() {
	s.mu.Lock()
	pending := s.pending != nil
	s.mu.Unlock()
	if !pending {
		_ = s.st.Close()
	}
	// No run starts after shutdown: the watcher goes even while a save
	// waits.
	s.closeGitStore()
}

// drain waits until the session's run and its queue are done: nothing
// holds the session and the queue has nothing it may start (held items,
// being edited, never start by themselves), or the session closed.
func (s *Session) drain(ctx context.Context) error {
	for {
		if err := s.Wait(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		done := s.drainedLocked()
		var idle <-chan struct{}
		if !done {
			idle = s.idleLocked()
		}
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
		}
	}
}

func (s *Session) drainedLocked() bool {
	if s.state.closed {
		return true
	}
	waiting := slices.ContainsFunc(s.queue, func(it *QueueItem) bool { return !it.Held })
	return !s.state.busy() && (!waiting || s.state.gate != gateOpen || s.pending != nil)
}

// recoveryBody is the content of a recovery file (docs/storage.md): the
// session's identity, why the save failed, its committed header, and the
// unsaved history, prompt timings and usage ledger.
func recoveryBody(id, workspaceID, cwd string, h store.Header, timings []store.PromptTiming, msgs []convo.Message, usage convo.SessionUsage, saveErr error) ([]byte, error) {
	return store.EncodeRecovery(&store.Recovery{
		SessionID: id, WorkspaceID: wsPtr(workspaceID), Cwd: cwd,
		Error: fmt.Sprint(saveErr), Header: h, Timings: timings, Messages: msgs, Usage: usage,
	})
}

// writeRecovery writes the unsaved snapshot next to the session directory
// (or in the temp dir when that fails too) as JSON, and returns the path of
// the file that holds it. Each attempt publishes the whole file or nothing
// (store.WriteFileAtomic): on a full disk, a plain create-then-write left an
// empty recovery file beside the session while the real one went to the
// temp dir.
func (s *Session) writeRecovery(msgs []convo.Message, saveErr error) (string, error) {
	// The pending run's timing and its calls are what the store lacks:
	// the file holds them, as session/get does (timingsLocked, s.usage).
	s.mu.Lock()
	timings, usage := s.timingsLocked(), s.usage
	s.mu.Unlock()
	body, err := recoveryBody(s.id, s.workspaceID, s.cwd, s.st.Header(), timings, msgs, usage, saveErr)
	if err != nil {
		return "", err
	}
	ms := time.Now().UnixMilli()
	var paths []string
	if s.st.Dir() != "" {
		paths = append(paths, s.e.root.Layout().Recovery(s.workspaceID, s.id, ms))
	}
	paths = append(paths, filepath.Join(os.TempDir(), store.RecoveryName(s.id, ms)))
	errs := []error{saveErr}
	for _, p := range paths {
		if err := store.WriteFileAtomic(p, body, 0o600); err != nil {
			errs = append(errs, err)
			continue
		}
		return p, saveErr
	}
	return "", errors.Join(errs...)
}

// retireJournalForRecovery retires the pending save's journal once its
// whole result is in a recovery file beside the session, where the next
// open finds it (state.recoveryFile). The journal holds at most part of
// that result (its writes may have failed with the commit's); left as it
// is, the next open would commit that part as an interrupted run, and the
// file's complete result could then only be imported as a copy
// (docs/storage.md, "Recovery files"). A file in the temp directory is
// found by no later process: the journal stays, the one copy that is.
func (s *Session) retireJournalForRecovery(path string) {
	if filepath.Dir(path) != filepath.Dir(s.e.root.Layout().Recovery(s.workspaceID, s.id, 0)) {
		return
	}
	s.mu.Lock()
	var j *store.Journal
	if s.pending != nil {
		j = s.pending.journal
	}
	s.mu.Unlock()
	s.retireJournal(j)
}
