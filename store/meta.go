package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/loopdev/loop/store/internal/fsys"
)

// MarkRead clears unread when messageCount, the number of messages the
// reader viewed, matches the saved history (docs/protocol.md, session/mark_read). A mismatched
// count or an empty history returns false without writing; a match returns
// true once unread=false is persisted, also when it already was (duplicate
// receipts). A draft has no saved history: false. Negative counts are
// ErrInvalid. It runs in the write queue, so a concurrent commit of newer
// output, which sets unread again, is never lost.
func (s *Session) MarkRead(messageCount int) (bool, error) {
	if messageCount < 0 {
		return false, fmt.Errorf("%w: messageCount %d", ErrInvalid, messageCount)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.kind == draft || s.hdr.MessageCount == 0 || messageCount != s.hdr.MessageCount {
		return false, nil
	}
	if !s.hdr.Unread {
		return true, nil
	}
	if err := s.writable(); err != nil {
		return false, err
	}
	next := s.hdr.clone()
	next.Unread = false
	if err := s.saveHeader(next); err != nil {
		return false, err
	}
	return true, nil
}

// SetPinned pins (keeping an existing timestamp) or unpins the session and
// returns pinnedAt (nil when unpinned). History and UpdatedAt are kept.
func (s *Session) SetPinned(pinned bool) (*string, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if pinned == (s.hdr.PinnedAt != nil) {
		return clonePtr(s.hdr.PinnedAt), nil
	}
	if err := s.writable(); err != nil {
		return nil, err
	}
	next := s.hdr.clone()
	next.PinnedAt = nil
	if pinned {
		ts := formatTime(s.now())
		next.PinnedAt = &ts
	}
	if err := s.saveHeader(next); err != nil {
		return nil, err
	}
	return clonePtr(s.hdr.PinnedAt), nil
}

// SetArchived archives (stamping archivedAt) or unarchives the session.
// Files, pin and UpdatedAt are kept.
func (s *Session) SetArchived(archived bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if archived == (s.hdr.ArchivedAt != nil) {
		return nil
	}
	if err := s.writable(); err != nil {
		return err
	}
	next := s.hdr.clone()
	next.ArchivedAt = nil
	if archived {
		ts := formatTime(s.now())
		next.ArchivedAt = &ts
	}
	return s.saveHeader(next)
}

// Delete removes the session: its directory (history, header, pin) is
// renamed out of sight in one step and then removed. The handle is closed.
// A draft or in-memory session just closes. Working directories are kept.
func (s *Session) Delete() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if s.kind != onDisk {
		if s.orphan != "" {
			if err := s.dropOrphan(); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
		}
		s.closed = true
		return nil
	}
	// The fork of what a rewind dropped goes into the scope first if it
	// still waits inside this directory, which is about to go; then forks
	// that read their first messages from this session get them as their
	// own first (store/forkbase.go), that one included.
	if err := s.finishPendingFork(nil); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := s.giveForksBases(nil, -1, -1); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	hidden, err := removeSessionDir(s.fs, s.feed, s.dir)
	if hidden {
		// Gone for every reader: the handle is closed even if removing
		// the tree failed.
		s.closed = true
		if relErr := s.release(); err == nil {
			err = relErr
		}
	}
	return err
}

// removeSessionDir deletes a session directory whose lock the caller holds,
// and holds until this returns: rename it to .deleted-<id>-<random>, which
// takes it out of every listing at once (List and Open ignore dot names),
// fsync the scope so it does not come back after a crash, remove the tree.
// hidden reports that the rename happened.
func removeSessionDir(fs fsys.FS, f feed, dir string) (hidden bool, err error) {
	scope := filepath.Dir(dir)
	tomb := filepath.Join(scope, ".deleted-"+filepath.Base(dir)+"-"+randomSuffix())
	if err := fs.Rename(dir, tomb); err != nil {
		return false, fmt.Errorf("delete %s: %w", dir, err)
	}
	f.deleted(scope, filepath.Base(dir))
	if err := fs.SyncDir(scope); err != nil {
		return true, fmt.Errorf("delete %s: fsync dir: %w", dir, err)
	}
	if err := fs.RemoveAll(tomb); err != nil {
		return true, fmt.Errorf("delete %s: %w", tomb, err)
	}
	return true, nil
}

// lockStored takes the lock of a stored session without opening it, and
// reads its header file. A session another handle holds is
// ErrSessionLocked; a missing one, or one of another format or version,
// ErrSessionNotFound.
func (r *Root) lockStored(workspaceID, id string) (dir string, header []byte, lock io.Closer, err error) {
	dir, err = r.sessionDir(workspaceID, id)
	if err != nil {
		return "", nil, nil, err
	}
	lock, err = r.fs.Lock(dir)
	switch {
	case errors.Is(err, fsys.ErrWouldBlock):
		return "", nil, nil, fmt.Errorf("%w: %s", ErrSessionLocked, dir)
	case errors.Is(err, os.ErrNotExist):
		return "", nil, nil, fmt.Errorf("%w: %s", ErrSessionNotFound, dir)
	case err != nil:
		return "", nil, nil, fmt.Errorf("lock session %s: %w", dir, err)
	}
	hpath := filepath.Join(dir, headerFile)
	header, err = r.fs.ReadFile(hpath)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		err = fmt.Errorf("%w: %s", ErrSessionNotFound, dir)
	case err != nil:
		err = fmt.Errorf("read %s: %w", hpath, err)
	default:
		// A current-format header is Loop's to change, even if it is
		// malformed past its format and version.
		if ok, perr := probeHeader(header, hpath); !ok {
			err = perr
			if err == nil {
				err = fmt.Errorf("%w: %w: %s", ErrSessionNotFound, ErrUnsupportedFormat, hpath)
			}
		}
	}
	if err != nil {
		lock.Close()
		return "", nil, nil, err
	}
	return dir, header, lock, nil
}

// DeleteSession deletes a stored session without opening it, as
// Session.Delete does (rename out of sight, fsync, remove). It reads neither
// the logs nor the cwd, so a listed session whose cwd is gone or whose files
// are malformed can still be deleted. It takes the session's lock: if a
// handle (in this process or another) holds it, it returns ErrSessionLocked
// and the holder must delete through its handle. A session of another
// format or version is ErrSessionNotFound and stays untouched.
func (r *Root) DeleteSession(workspaceID, id string) (err error) {
	dir, header, lock, err := r.lockStored(workspaceID, id)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := lock.Close(); err == nil {
			err = cerr
		}
	}()
	// The fork of what a rewind dropped goes into the scope first if it
	// still waits inside this directory (store/rewind.go), as opening
	// would move it; then its forks, that one included, get their part of
	// it (store/forkbase.go). A session that cannot be read while forks
	// need it is not deleted.
	if pf := pendingForkOf(header); pf != "" {
		if err := movePendingFork(r.fs, dir, pf); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
	}
	st := &Session{id: id, fs: r.fs, now: r.now, kind: onDisk, dir: dir}
	if err := st.giveForksBases(nil, -1, -1); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	_, err = removeSessionDir(r.fs, r.feed(), dir)
	return err
}

// SetSessionArchived archives (stamping archivedAt) or unarchives a stored
// session without opening it, as Session.SetArchived does: it rewrites only
// header.json (atomically), reads no log and does not check the cwd. Locks
// and formats are handled as by DeleteSession; a header that is itself
// malformed is ErrMalformed.
func (r *Root) SetSessionArchived(workspaceID, id string, archived bool) (err error) {
	dir, data, lock, err := r.lockStored(workspaceID, id)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := lock.Close(); err == nil {
			err = cerr
		}
	}()
	hpath := filepath.Join(dir, headerFile)
	// An old header's prompt timings stay in it: only a commit moves them.
	h, legacy, err := parseHeaderTimings(data, hpath)
	if err != nil {
		return err
	}
	if err := checkPlace(&h, dir, hpath); err != nil {
		return err
	}
	if archived == (h.ArchivedAt != nil) {
		return nil
	}
	prev := h
	h.ArchivedAt = nil
	if archived {
		ts := formatTime(r.now())
		h.ArchivedAt = &ts
	}
	next, err := encodeHeader(&h, legacy)
	if err != nil {
		return err
	}
	f := r.feed()
	pubs := f.publishing(filepath.Dir(dir), id, &prev, &h)
	pubs.ready()
	err = writeFileAtomic(r.fs, hpath, next, 0o600)
	var pub *publishedError
	if errors.As(err, &pub) {
		// Visible but maybe not durable: put the previous header back, so
		// that a failure changes nothing, as for an open session.
		writeFileAtomic(r.fs, hpath, data, 0o600)
	}
	pubs.done(err == nil)
	if err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	f.savedMeta(filepath.Dir(dir), &h)
	return nil
}

// pendingForkOf is the pendingFork a header names, read without checking
// the rest of it: a session that is malformed otherwise can still be
// deleted, and its waiting fork is still the rewind's. A header that does
// not decode names none.
func pendingForkOf(header []byte) string {
	var h struct {
		PendingFork string `json:"pendingFork"`
	}
	if json.Unmarshal(header, &h) != nil || !validID(h.PendingFork) {
		return ""
	}
	return h.PendingFork
}
