package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// A fork's history starts with its ancestors' messages, and the file
// checkpoints of the runs that made them stay in the ancestors'
// file-checkpoints directories (docs/storage.md, "File checkpoints"):
// the fork reads them there, read only, as it reads those messages.

// AncestorCheckpoints is the checkpoint log of one session a fork's
// history comes from.
type AncestorCheckpoints struct {
	SessionID string
	// Log is read only (its writes fail); nil when the ancestor is gone:
	// the fork reads its part of the history from a base, which holds no
	// checkpoints (store/forkbase.go), so those runs' are lost.
	Log *FileCheckpoints
}

// AncestorCheckpoints returns the checkpoint logs of the session's
// ancestors, oldest first: its parent's parent's ..., then its parent's.
// A session that is not a fork has none. The walk stops at an ancestor
// that is gone (its entry's Log is nil): the ones before it are gone
// with it, as far as this session can tell.
func (s *Session) AncestorCheckpoints() ([]AncestorCheckpoints, error) {
	s.mu.Lock()
	h, dir, kind := s.hdr.clone(), s.dir, s.kind
	s.mu.Unlock()
	if kind != onDisk {
		return nil, nil
	}
	var out []AncestorCheckpoints
	for h.Parent != nil {
		id := h.Parent.SessionID
		pdir, base := (&Session{fs: s.fs, dir: dir}).parentDir(&h)
		if base {
			out = append(out, AncestorCheckpoints{SessionID: id})
			break
		}
		hpath := filepath.Join(pdir, headerFile)
		data, err := s.fs.ReadFile(hpath)
		if errors.Is(err, os.ErrNotExist) {
			out = append(out, AncestorCheckpoints{SessionID: id})
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", hpath, err)
		}
		ph, err := parseHeader(data, hpath)
		if err != nil {
			return nil, err
		}
		if err := checkPlace(&ph, pdir, hpath); err != nil {
			return nil, err
		}
		if ph.ID != id {
			return nil, malformed(hpath, "parent %s holds session %s", pdir, ph.ID)
		}
		ro := &Session{id: id, fs: s.fs, now: s.now, kind: onDisk, dir: pdir, readOnly: errProbe}
		out = append(out, AncestorCheckpoints{SessionID: id, Log: &FileCheckpoints{s: ro, dir: fileCheckpointsOf(pdir)}})
		h, dir = ph, pdir
	}
	slices.Reverse(out)
	return out, nil
}

// MessagesCRCAt is the CRC-32C of the lines of the session's first k
// committed messages (the checksum its header keeps for the whole
// history, docs/storage.md): two histories with the same first k lines
// have the same one, however they were made (a fork, a rewind's fork of
// what it dropped).
func (s *Session) MessagesCRCAt(k int) (uint32, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.kind != onDisk {
		return 0, fmt.Errorf("%w: session %s is not stored yet", ErrInvalid, s.id)
	}
	if k < 0 || k > s.hdr.MessageCount {
		return 0, fmt.Errorf("%w: %d messages of a history of %d", ErrInvalid, k, s.hdr.MessageCount)
	}
	return s.prefixCRC(k)
}
