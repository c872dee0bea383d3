package store

import (
	"fmt"
	"path/filepath"
)

// MarkRead clears unread when messageCount, the number of messages the
// reader viewed, matches the saved history (seeds 000 and 001). A mismatched
// count or an empty history returns false without writing; a match returns
// true once unread=false is persisted, also when it already was (duplicate
// receipts). A draft has no saved history: false. Negative counts are
// ErrInvalid. It runs in the write queue, so a concurrent commit of newer
// output, which sets unread again, is never lost.
func (s *Session) MarkRead(messageCount int) (bool, error) {
	if messageCount < 0 {
		return false, fmt.Errorf("%w: messageCount %d", ErrInvalid, messageCount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	scope := filepath.Dir(s.dir)
	tomb := filepath.Join(scope, ".deleted-"+s.hdr.ID)
	if err := s.fs.RemoveAll(tomb); err != nil {
		return fmt.Errorf("delete %s: %w", tomb, err)
	}
	// rename takes the session out of every listing at once; List and Open
	// ignore dot-named directories.
	if err := s.fs.Rename(s.dir, tomb); err != nil {
		return fmt.Errorf("delete %s: %w", s.dir, err)
	}
	s.closed = true
	relErr := s.release()
	// fsync the scope directory so the session does not come back after a
	// crash.
	if err := s.fs.SyncDir(scope); err != nil {
		return fmt.Errorf("delete %s: fsync dir: %w", s.dir, err)
	}
	if err := s.fs.RemoveAll(tomb); err != nil {
		return fmt.Errorf("delete %s: %w", tomb, err)
	}
	return relErr
}
