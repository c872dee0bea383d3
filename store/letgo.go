package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Two processes, one conversation (docs/storage.md, "Letting go while
// idle"): a writer with nothing to write lets go of the session's lock
// (LetGo), so that another process may take it and commit; before its
// next write it takes the lock again (Relock) and reads what the other
// committed meanwhile. That read costs what was added, not the history:
// the header names the committed ranges and each log's checksum continues
// from the one before, so the handle reads only the bytes past its own
// ranges and checks that they continue its checksums.

// LetGo releases the session's lock and closes its logs, and the handle
// stays open, read-only, reading what it holds: its next write (or
// TryWritable, or Relock) takes the lock again. Call it only when nothing
// of the session is being written or waits to be (no run, no queued
// input, no pending save): a write that takes the lock again fails with
// ErrStale if another process committed meanwhile, and only Relock picks
// that up. A draft, a session in memory, a read-only or closed handle, or
// one whose failed commit left a header durable past its committed range
// (the next commit must repair it under the lock) keep what they have.
func (s *Session) LetGo() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed || s.kind != onDisk || s.readOnly != nil || s.lock == nil || s.diskAhead {
		return nil
	}
	// The journal's file is closed too: the next writer truncates and
	// rewrites it, and this handle opens it again at its next run.
	first := s.closeJournal()
	s.closeLogs()
	if err := s.lock.Close(); err != nil && first == nil {
		first = err
	}
	s.lock = nil
	s.tenure++
	s.setReadOnly(fmt.Errorf("%w: %s (let go while idle)", ErrSessionLocked, s.dir))
	return first
}

// Caught is what Relock picked up from another writer.
type Caught struct {
	// From is the history's length before: Messages()[From:] are the
	// messages another process committed (a recovered run's included).
	From int
	// RuntimeFrom is the runtime log's length before.
	RuntimeFrom int
	// Changed: the header changed (history, metadata, usage or timings).
	Changed bool
	// Recovered is a run a crashed writer left in the journal, committed
	// by this Relock as an interrupted run; nil for none.
	Recovered *JournalRecovery
}

// Relock makes a read-only handle writable again, as TryWritable does, and
// also when another writer changed the session since this handle read it:
// it reads what that writer committed (only the bytes past this handle's
// committed ranges, checked against the header's checksums) and installs
// it, then recovers a run a crashed writer left in the journal, as Open
// does. When the disk does not hold a continuation of this handle's
// history (another writer rewrote it), it stays read-only with ErrStale,
// and the session must be opened again. A writable handle returns at once.
func (s *Session) Relock() (Caught, error) {
	s.wmu.Lock()
	s.mu.Lock()
	c := Caught{From: len(s.msgs), RuntimeFrom: len(s.rt)}
	before, prevRec := s.hdr, s.recovered
	s.mu.Unlock()
	if s.closed {
		s.wmu.Unlock()
		return c, fmt.Errorf("%w: %s", ErrClosed, s.id)
	}
	if s.readOnly == nil {
		s.wmu.Unlock()
		return c, nil
	}
	journal := s.relockWith(true)
	err := s.readOnly
	s.wmu.Unlock()
	if err != nil {
		return c, err
	}
	if journal {
		// The lock is this handle's, so the journal's writer is gone:
		// recover its run as an open would (recover.go). Commit takes
		// the write queue itself.
		if err := s.recoverJournal(); err != nil {
			s.wmu.Lock()
			s.closeLogs()
			if s.lock != nil {
				s.lock.Close()
				s.lock = nil
			}
			s.setReadOnly(fmt.Errorf("%w: %w", ErrNotWritable, err))
			s.wmu.Unlock()
			return c, s.ReadOnlyReason()
		}
	}
	s.mu.Lock()
	if s.recovered != prevRec {
		r := *s.recovered
		c.Recovered = &r
	}
	c.Changed = !sameHeader(&before, &s.hdr)
	s.mu.Unlock()
	return c, nil
}

// errNotTail: the disk's header does not extend this handle's: another
// writer rewrote the history, or the ranges shrank.
var errNotTail = errors.New("the committed history does not continue this handle's")

// tail is what another writer committed past this handle's ranges.
type tail struct {
	msgs    []convo.Message
	rt      []RuntimeRecord
	timings []PromptTiming // all of them after the new records, nil for unchanged
}

// readTail reads the committed ranges of h past those of s.hdr from the
// logs files (messages, index, runtime, timings; the last may be nil),
// and checks them as Open checks a whole log: each range's checksum must
// continue s.hdr's to h's, the index records must match the lines, the
// lines must decode. Call it holding wmu, with the session's lock.
func (s *Session) readTail(files [4]fsys.File, h *Header) (tail, error) {
	old := &s.hdr
	if h.MessageCount < old.MessageCount || h.MessagesBytes < old.MessagesBytes ||
		h.RuntimeCount < old.RuntimeCount || h.RuntimeBytes < old.RuntimeBytes ||
		h.TimingsCount < old.TimingsCount || h.TimingsBytes < old.TimingsBytes || s.legacyTimings {
		return tail{}, errNotTail
	}
	// A fork's logs hold only its own messages, after its parent's part:
	// the same part, or this is no tail of it.
	if (old.Parent == nil) != (h.Parent == nil) || old.Parent != nil && *old.Parent != *h.Parent {
		return tail{}, errNotTail
	}
	var t tail
	mpath, ipath := filepath.Join(s.dir, messagesFile), filepath.Join(s.dir, indexFile)
	data, err := readRange(files[0], mpath, old.MessagesBytes, h.MessagesBytes)
	if err != nil {
		return tail{}, err
	}
	if fsys.CRC32C(old.MessagesCRC, data) != h.MessagesCRC {
		return tail{}, errNotTail
	}
	n := h.MessageCount - old.MessageCount
	// index.bin holds a record per message of the session's own log.
	if isize := indexSize(h.ownMessages()); isize < 0 {
		return tail{}, malformed(filepath.Join(s.dir, headerFile), "messageCount %d is too large", h.MessageCount)
	}
	idx, err := readRange(files[1], ipath, int64(old.ownMessages())*indexRecordSize, int64(h.ownMessages())*indexRecordSize)
	if err != nil {
		return tail{}, err
	}
	// The records hold offsets in the whole log; parseMessages checks
	// them against the lines of data, which starts at the old end.
	rebased := make([]byte, 0, len(idx))
	for i := range n {
		r := readIndexRecord(idx, i)
		rebased = appendIndexRecord(rebased, r.off-old.MessagesBytes, r.n, r.kind)
	}
	if t.msgs, err = parseMessages(data, old.MessageCount, n, rebased, mpath, ipath); err != nil {
		return tail{}, err
	}
	if users := countUsers(t.msgs); old.UserMessageCount+users != h.UserMessageCount {
		return tail{}, malformed(filepath.Join(s.dir, headerFile), "userMessageCount %d, the log holds %d user messages", h.UserMessageCount, old.UserMessageCount+users)
	}
	rpath := filepath.Join(s.dir, runtimeFile)
	if data, err = readRange(files[2], rpath, old.RuntimeBytes, h.RuntimeBytes); err != nil {
		return tail{}, err
	}
	if fsys.CRC32C(old.RuntimeCRC, data) != h.RuntimeCRC {
		return tail{}, errNotTail
	}
	if t.rt, err = parseRuntime(data, h.RuntimeCount-old.RuntimeCount, rpath); err != nil {
		return tail{}, err
	}
	if h.TimingsCount == old.TimingsCount {
		return t, nil
	}
	tpath := filepath.Join(s.dir, timingsFile)
	if files[3] == nil {
		return tail{}, malformed(tpath, "missing")
	}
	if data, err = readRange(files[3], tpath, old.TimingsBytes, h.TimingsBytes); err != nil {
		return tail{}, err
	}
	if fsys.CRC32C(old.TimingsCRC, data) != h.TimingsCRC {
		return tail{}, errNotTail
	}
	lines, err := splitLines(data, h.TimingsCount-old.TimingsCount, tpath)
	if err != nil {
		return tail{}, err
	}
	writes := make([]TimingAt, len(lines))
	for i, l := range lines {
		var cut bool
		if writes[i], cut, err = parseTimingLine(l, old.TimingsCount+i+1, tpath); err != nil {
			return tail{}, err
		}
		if cut {
			// A rewind's cut comes with a history cut too, which the
			// messages' checksum refused above; a cut alone is no tail
			// either.
			return tail{}, errNotTail
		}
	}
	// applyTimings copies the slice readers share before it replaces one.
	if t.timings, err = applyTimings(s.timings, writes); err != nil {
		return tail{}, malformed(tpath, "%v", err)
	}
	return t, nil
}

// readRange reads bytes [from, to) of the log at path.
func readRange(f fsys.File, path string, from, to int64) ([]byte, error) {
	if to == from {
		return nil, nil
	}
	if err := checkSize(f, path, to); err != nil {
		return nil, err
	}
	buf := make([]byte, to-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf, nil
}

// installTail makes what readTail read this handle's committed state, with
// h its header. The observers learnt of it from the writer that committed
// it, so their positions move past it. Call it holding wmu.
func (s *Session) installTail(h Header, t tail) {
	n := len(s.msgs)
	s.install(h, t.msgs, t.rt, t.timings)
	for i := range s.taken {
		if s.taken[i] >= n {
			s.taken[i] = len(s.msgs)
		}
	}
}

// sameHeader reports whether two headers are equal.
func sameHeader(a, b *Header) bool { return reflect.DeepEqual(a, b) }
