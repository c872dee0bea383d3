package engine

import (
	"fmt"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/importer"
	"github.com/loopdev/loop/store"
)

// Recovery files read back (docs/storage.md, "Recovery files";
// docs/cli.md, loop import). A recovery file holds a session's unsaved
// result: the whole history, timings and usage ledger as they were when
// a save was refused at exit. Import commits what the session's committed
// history lacks, once; a session that went on without the result gets a
// copy with it instead; a session that never reached the disk (a draft's
// first run) is created from the file. Snapshots name a file still
// waiting (state.recoveryFile), found once when the session opens.

// importRecovery commits the recovery file read from path (its bytes,
// data) into its session and reports what became of it.
func (e *Engine) importRecovery(res ImportResult, data []byte, path string) ImportResult {
	fail := func(err error) ImportResult {
		res.Err = err
		return res
	}
	rec, err := store.ParseRecovery(data, path)
	if err != nil {
		return fail(wrapError(CodeInvalidParams, err, "%s", res.File))
	}
	sum := store.Checksum(data)
	workspaceID := ""
	if rec.WorkspaceID != nil {
		workspaceID = *rec.WorkspaceID
	}
	if _, err := e.checkScope(workspaceID); err != nil {
		return fail(wrapError(CodeOf(err), err, "%s: the workspace of session %s", res.File, rec.SessionID))
	}
	s, err := e.Session(rec.SessionID)
	if CodeOf(err) == CodeSessionNotFound {
		// Never on disk: a draft's unsaved first run.
		return e.importRecoveryAsSession(res, rec, sum, path, true)
	}
	if err != nil {
		return fail(err)
	}
	if s.workspaceID != workspaceID {
		// A file that is not this session's, whatever its id says.
		return fail(errorf(CodeInvalidParams, "%s: session %s belongs to another workspace than the file names", res.File, rec.SessionID))
	}
	fit, err := s.applyRecovery(rec, path)
	if err != nil {
		return fail(wrapError(CodeOf(err), err, "%s", res.File))
	}
	if fit == store.RecoveryDiverged {
		res = e.importRecoveryAsSession(res, rec, sum, path, false)
		if res.Err == nil {
			res.Note = fmt.Sprintf("session %s went on without this result: a copy with it", rec.SessionID)
		}
		s.findRecoveryFile()
		return res
	}
	snap := s.Snapshot()
	res.SessionID, res.Cwd, res.Messages = s.id, s.cwd, snap.State.MessageCount
	res.WorkspaceID = s.workspaceID
	res.Existed = fit == store.RecoveryApplied
	return res
}

// importRecoveryAsSession writes the file as a new session: under the
// session's own id (keepID: it never reached the disk), or as a copy of a
// session that went on without it. Importing the same file again finds
// that session.
func (e *Engine) importRecoveryAsSession(res ImportResult, rec *store.Recovery, sum [32]byte, path string, keepID bool) ImportResult {
	imp := rec.Imported(path, keepID)
	workspaceID := ""
	if rec.WorkspaceID != nil {
		workspaceID = *rec.WorkspaceID
	}
	st, existed, err := e.root.Import(&imp, sum, workspaceID, "")
	if err != nil {
		res.Err = storageError(err, fmt.Sprintf("import %s", res.File))
		return res
	}
	return importedResult(res, st, existed)
}

// applyRecovery commits what the committed history lacks of rec and says
// how the file stood to the history. Only RecoveryExtends writes: the
// missing messages, their timings and the usage the committed header
// lacks, in one commit, as a run's, as an idle command (refused while
// busy, with an unsaved result of its own, or read-only: session_locked).
// The other two need no admission: a committed history only grows, so
// one that already holds the file's, or has left it, always will, even
// while a run goes on or another process writes the session.
func (s *Session) applyRecovery(rec *store.Recovery, path string) (fit store.RecoveryFit, err error) {
	if fit := rec.Fit(s.st.Messages(), s.st.Timings()); fit != store.RecoveryExtends {
		return fit, nil
	}
	c, err := s.beginCommand(OpFlush, kindSavedCommand)
	if err != nil {
		return 0, err
	}
	defer s.settleCommand(c.release, &err)
	s.mu.Lock()
	n := len(s.history)
	history := s.history[:n:n]
	timings := s.st.Timings()
	s.mu.Unlock()
	fit = rec.Fit(history, timings)
	if fit != store.RecoveryExtends {
		c.release()
		return fit, nil
	}
	add := rec.Messages[n:]
	writes := make([]store.TimingAt, 0, len(rec.Timings)-len(timings))
	for i := len(timings); i < len(rec.Timings); i++ {
		writes = append(writes, store.TimingAt{Index: i, Timing: rec.Timings[i]})
	}
	unsaved := rec.Unsaved()
	newOutput := hasOutput(add)
	updated := rec.Header.UpdatedAt
	for i := range add {
		updated = max(updated, add[i].Timestamp)
	}
	edit := func(h *store.Header) {
		h.UpdatedAt = max(h.UpdatedAt, updated)
		if newOutput {
			h.Unread = true
		}
		h.Usage.Add(unsaved)
	}
	msgs := append(history, add...)
	err = s.commit(msgs, edit, writes...)
	if err == nil {
		s.mu.Lock()
		for _, m := range add {
			s.appendLocked(m)
		}
		s.usage.Add(unsaved)
		s.mu.Unlock()
	}
	c.release()
	if err != nil {
		return 0, err
	}
	s.e.log.Info("recovery file imported", "session", s.id, "path", path, "messages", len(add))
	s.findRecoveryFile()
	s.publishState()
	s.publishListChange("activity")
	return fit, nil
}

// maxRecoveryScan bounds the recovery files a session's open reads: each
// is read whole to compare it with the history.
const maxRecoveryScan = 8

// findRecoveryFile looks for a recovery file waiting for the session
// beside its directory (store.Root.RecoveryFiles) and keeps it for
// snapshots (state.recoveryFile): the newest that the committed history
// does not hold yet and that no copy was made of. It reads the scope's
// directory and the files it finds, so it runs when a session opens
// and after an import, never per snapshot; a file this process writes
// is kept as it is written (writeRecovery).
func (s *Session) findRecoveryFile() {
	if !s.st.Persistent() || s.st.IsDraft() {
		return
	}
	paths, err := s.e.root.RecoveryFiles(s.workspaceID, s.id)
	if err != nil {
		s.e.log.Warn("recovery files not looked for", "session", s.id, "err", err)
	}
	s.mu.Lock()
	history := s.history[:len(s.history):len(s.history)]
	s.mu.Unlock()
	timings := s.st.Timings()
	found := ""
	for i := len(paths) - 1; i >= 0 && i >= len(paths)-maxRecoveryScan; i-- {
		if waitingRecovery(s.e.root, paths[i], history, timings) {
			found = paths[i]
			break
		}
	}
	s.mu.Lock()
	s.recoveryFile = found
	s.mu.Unlock()
}

// waitingRecovery: the file at path is a recovery file whose result the
// session does not hold (history, timings) and that was not imported as
// a copy. A file that cannot be read or parsed is not waiting: loop
// import names its problem.
func waitingRecovery(root *store.Root, path string, history []convo.Message, timings []store.PromptTiming) bool {
	data, err := readSource(path)
	if err != nil {
		return false
	}
	rec, err := store.ParseRecovery(data, path)
	if err != nil {
		return false
	}
	switch rec.Fit(history, timings) {
	case store.RecoveryExtends:
		return true
	case store.RecoveryDiverged:
		_, copied, err := root.ImportedCopy(store.Checksum(data))
		return err == nil && !copied
	}
	return false
}

// wroteRecovery keeps the file Shutdown just wrote for snapshots; a
// flush that saves the result after all removes it and forgets it.
func (s *Session) wroteRecovery(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recoveryFile = path
}

// forgetRecovery forgets path if it is the waiting file.
func (s *Session) forgetRecovery(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recoveryFile == path {
		s.recoveryFile = ""
	}
}

// isRecoveryFormat: the import's source is a recovery file.
func isRecoveryFormat(format string) bool { return format == importer.FormatRecovery }
