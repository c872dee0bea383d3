package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// readHeader reads and checks the header of a stored session without
// locking or loading it.
func (r *Root) readHeader(workspaceID, id string) (Header, string, error) {
	dir, err := r.sessionDir(workspaceID, id)
	if err != nil {
		return Header{}, "", err
	}
	hpath := filepath.Join(dir, headerFile)
	data, err := r.fs.ReadFile(hpath)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Header{}, "", fmt.Errorf("%w: %s", ErrSessionNotFound, dir)
	}
	if err != nil {
		return Header{}, "", fmt.Errorf("read %s: %w", hpath, err)
	}
	h, err := parseHeader(data, hpath)
	if errors.Is(err, ErrUnsupportedFormat) {
		return Header{}, "", fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	if err == nil {
		err = checkPlace(&h, dir, hpath)
	}
	return h, dir, err
}

// ReadHeader returns a stored session's header without opening the session
// (no lock, no logs).
func (r *Root) ReadHeader(workspaceID, id string) (Header, error) {
	h, _, err := r.readHeader(workspaceID, id)
	return h, err
}

// readIndex reads index.bin records [from, to) of the committed range.
func (r *Root) readIndex(dir string, h *Header, from, to int) ([]byte, error) {
	if from < 0 || to > h.MessageCount || from > to {
		return nil, fmt.Errorf("%w: range [%d, %d) of %d messages", ErrInvalid, from, to, h.MessageCount)
	}
	path := filepath.Join(dir, indexFile)
	f, err := r.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	// The header's counts are not trusted with an allocation: a corrupt
	// count must be ErrMalformed, not an overflow or an out-of-memory crash.
	if err := checkSize(f, path, indexSize(to)); err != nil {
		return nil, err
	}
	buf := make([]byte, (to-from)*indexRecordSize)
	if _, err := f.ReadAt(buf, int64(from)*indexRecordSize); err != nil {
		return nil, malformed(path, "records [%d, %d): %v", from, to, err)
	}
	return buf, nil
}

// indexSize is the size of count index records, or -1 when that does not
// fit in an int64 (only a corrupt header names such a count).
func indexSize(count int) int64 {
	if count < 0 || int64(count) > math.MaxInt64/indexRecordSize {
		return -1
	}
	return int64(count) * indexRecordSize
}

// checkSize reports ErrMalformed unless the file holds at least size bytes
// (size -1 never fits).
func checkSize(f fsys.File, path string, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if size < 0 || fi.Size() < size {
		return malformed(path, "header names more than the file's %d bytes", fi.Size())
	}
	return nil
}

// ReadMessages pages a stored session's history without opening it: it
// reads the header, index.bin records [from, to) and just those lines of
// messages.jsonl. The lines are checked against the index but, unlike Open,
// not against the whole log's checksum.
func (r *Root) ReadMessages(workspaceID, id string, from, to int) ([]convo.Message, error) {
	h, dir, err := r.readHeader(workspaceID, id)
	if err != nil {
		return nil, err
	}
	if h.Parent != nil {
		// A fork's first messages are its parent's: read the history
		// through its chain (store/fork.go).
		all, err := r.readWhole(dir, &h, from, to)
		if err != nil {
			return nil, err
		}
		return append([]convo.Message{}, all[from:to]...), nil
	}
	idx, err := r.readIndex(dir, &h, from, to)
	if err != nil || from == to {
		return []convo.Message{}, err
	}
	mpath, ipath := filepath.Join(dir, messagesFile), filepath.Join(dir, indexFile)
	first, last := readIndexRecord(idx, 0), readIndexRecord(idx, to-from-1)
	start, end := first.off, last.off+int64(last.n)
	if start < 0 || end > h.MessagesBytes || start > end {
		return nil, malformed(ipath, "records [%d, %d) point outside the committed range", from, to)
	}
	f, err := r.fs.OpenFile(mpath, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", mpath, err)
	}
	defer f.Close()
	if err := checkSize(f, mpath, end); err != nil {
		return nil, err
	}
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, malformed(mpath, "bytes [%d, %d): %v", start, end, err)
	}
	// The records cut buf into lines here, so records that do not fall on
	// line ends are index.bin's fault, not the log's.
	rebased := make([]byte, 0, len(idx))
	var off int64
	for i := range to - from {
		rec := readIndexRecord(idx, i)
		rel := rec.off - start
		if rel != off || rec.n == 0 || int64(rec.n) > int64(len(buf))-rel ||
			bytes.IndexByte(buf[rel:rel+int64(rec.n)], '\n') != int(rec.n)-1 {
			return nil, malformed(ipath, "record %d (offset %d, length %d) does not match a line of %s", from+i, rec.off, rec.n, messagesFile)
		}
		off += int64(rec.n)
		rebased = appendIndexRecord(rebased, rel, rec.n, rec.kind)
	}
	return parseMessages(buf, from, to-from, rebased, mpath, ipath)
}

// Rounds returns the history index of every user message of a stored
// session (each starts a round), read from index.bin alone.
func (r *Root) Rounds(workspaceID, id string) ([]int, error) {
	h, dir, err := r.readHeader(workspaceID, id)
	if err != nil {
		return nil, err
	}
	rounds := make([]int, 0, h.UserMessageCount)
	if h.Parent != nil {
		all, err := r.readWhole(dir, &h, 0, h.MessageCount)
		if err != nil {
			return nil, err
		}
		for i := range all {
			if all[i].IsUser() {
				rounds = append(rounds, i)
			}
		}
		return rounds, nil
	}
	idx, err := r.readIndex(dir, &h, 0, h.MessageCount)
	if err != nil {
		return nil, err
	}
	for i := range h.MessageCount {
		if readIndexRecord(idx, i).kind == kindUser {
			rounds = append(rounds, i)
		}
	}
	return rounds, nil
}

// readWhole reads a fork's whole committed history, without its lock,
// checking that [from, to) is inside the history h names.
func (r *Root) readWhole(dir string, h *Header, from, to int) ([]convo.Message, error) {
	if from < 0 || to > h.MessageCount || from > to {
		return nil, fmt.Errorf("%w: range [%d, %d) of %d messages", ErrInvalid, from, to, h.MessageCount)
	}
	s := &Session{fs: r.fs, now: r.now, kind: onDisk, dir: dir, readOnly: errProbe}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.closeLogs()
	if len(s.msgs) < to {
		return nil, fmt.Errorf("%w: range [%d, %d) of %d messages", ErrInvalid, from, to, len(s.msgs))
	}
	return s.msgs, nil
}
