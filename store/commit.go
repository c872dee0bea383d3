package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Commit stores a history snapshot. msgs is the complete history: it must
// extend the committed one (same length or longer, same last committed
// message), and msgs[len(Messages()):] is appended. runtime records are
// appended to the runtime log. timings are prompt timings to record, in
// order, each at its index (TimingAt: a replacement or the next one);
// only they are written, never the timings already committed. edit, if
// not nil, changes the header's metadata; the store owns the identity, cwd
// and committed-range fields and restores them after edit.
//
// UpdatedAt: a commit that appends messages sets it to the current time
// before edit runs (edit may still change it); other commits keep it.
//
// The protocol (docs/storage.md): append the new bytes to messages.jsonl,
// index.bin, runtime.jsonl and timings.jsonl and fsync them; then publish header.json,
// which names the new committed range, through a temporary file, fsync,
// rename and directory fsync. If any step fails, Commit returns the error
// and nothing committed changes: Messages(), Header() and readers of the
// files still see the previous range. Calling Commit again with the same
// arguments retries; the unpublished tail is truncated first.
//
// A draft commits in memory until the history holds a user message; that
// commit creates the session directory atomically (built under a temporary
// name, then renamed into place). An in-memory session only updates memory.
//
// A session whose header.json still holds its prompt timings (written
// before timings.jsonl) moves them to timings.jsonl in its next commit on
// disk, and publishes a header without them.
//
// Messages passed to Commit are kept by reference: do not modify them after.
func (s *Session) Commit(msgs []convo.Message, runtime []RuntimeRecord, edit func(*Header), timings ...TimingAt) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	n := len(s.msgs)
	if len(msgs) < n {
		return fmt.Errorf("%w: history of %d messages does not extend the %d committed", ErrInvalid, len(msgs), n)
	}
	if n > 0 && !sameMessage(&msgs[n-1], &s.msgs[n-1]) {
		return fmt.Errorf("%w: message %d differs from the committed one: the history does not extend the committed history", ErrInvalid, n-1)
	}
	add := msgs[n:]
	allTimings, err := applyTimings(s.timings, timings)
	if err != nil {
		return err
	}

	next := s.hdr.clone()
	if len(add) > 0 {
		next.UpdatedAt = max(s.now().UnixMilli(), next.UpdatedAt)
	}
	switch {
	case s.kind == inMemory || (s.kind == draft && next.UserMessageCount+countUsers(add) == 0):
		// Memory only: count what a disk commit would, without encoding.
		next.MessageCount += len(add)
		next.UserMessageCount += countUsers(add)
		next.RuntimeCount += len(runtime)
		next.TimingsCount += len(timings)
		if err := applyEdit(&next, edit); err != nil {
			return err
		}
		if err := checkRoles(add); err != nil {
			return err
		}
		s.install(next, add, runtime, allTimings)
		return nil

	case s.kind == draft:
		all := append(s.msgs[:n:n], add...)
		allRT := append(s.rt[:len(s.rt):len(s.rt)], runtime...)
		b, err := encodeBatch(all, 0, 0, allRT)
		if err != nil {
			return err
		}
		// The first write holds each timing once, at its index.
		if b.timings, err = encodeTimings(indexed(allTimings)); err != nil {
			return err
		}
		setRange(&next, b, len(all), len(allRT), len(allTimings), &Header{})
		if err := applyEdit(&next, edit); err != nil {
			return err
		}
		return s.createOnDisk(all, allRT, allTimings, next, b)
	}

	b, err := encodeBatch(add, s.hdr.MessagesBytes, s.hdr.MessagesCRC, runtime)
	if err != nil {
		return err
	}
	writes := timings
	if s.legacyTimings {
		// The migrating commit: the timings header.json held come first,
		// so that the file alone holds them all.
		writes = append(indexed(s.timings), timings...)
	}
	if b.timings, err = encodeTimings(writes); err != nil {
		return err
	}
	setRange(&next, b, len(add), len(runtime), len(writes), &s.hdr)
	next.UserMessageCount = s.hdr.UserMessageCount + b.users
	if b.users > 0 {
		next.PendingRun = "" // the run that wrote a draft is committed, or another run is
	}
	if err := applyEdit(&next, edit); err != nil {
		return err
	}
	if err := s.appendAndPublish(b, &next); err != nil {
		return err
	}
	s.install(next, add, runtime, allTimings)
	s.legacyTimings = false
	s.committed()
	return nil
}

// indexed returns ts as writes at their own indexes.
func indexed(ts []PromptTiming) []TimingAt {
	if len(ts) == 0 {
		return nil
	}
	out := make([]TimingAt, len(ts))
	for i := range ts {
		out[i] = TimingAt{Index: i, Timing: ts[i]}
	}
	return out
}

// install makes a committed write visible to readers: the new header, the
// appended messages and runtime records, and the timings (nil keeps
// them). Call it holding wmu.
func (s *Session) install(next Header, add []convo.Message, runtime []RuntimeRecord, timings []PromptTiming) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, add...)
	s.rt = append(s.rt, runtime...)
	if timings != nil {
		s.timings = timings
	}
	s.hdr = next
}

// setRange fills the committed-range fields of h for a batch of nMsgs
// messages, nRT runtime records and nTm timing records appended after the
// committed range of prev (whose checksum encodeBatch continued).
// UserMessageCount is the batch's; the caller adds the previous count.
func setRange(h *Header, b encodedBatch, nMsgs, nRT, nTm int, prev *Header) {
	h.MessageCount = prev.MessageCount + nMsgs
	h.UserMessageCount = b.users
	h.MessagesBytes = prev.MessagesBytes + b.size
	h.MessagesCRC = b.crc
	h.RuntimeCount = prev.RuntimeCount + nRT
	h.RuntimeBytes = prev.RuntimeBytes + int64(len(b.rt))
	h.RuntimeCRC = fsys.CRC32C(prev.RuntimeCRC, b.rt)
	h.TimingsCount = prev.TimingsCount + nTm
	h.TimingsBytes = prev.TimingsBytes + int64(len(b.timings))
	h.TimingsCRC = fsys.CRC32C(prev.TimingsCRC, b.timings)
}

// sameMessage is a cheap check that m is the committed message c: a commit
// costs what is new, so it does not compare whole histories.
func sameMessage(m, c *convo.Message) bool {
	return m.Role == c.Role && m.Timestamp == c.Timestamp && m.RequestID == c.RequestID &&
		m.ToolCallID == c.ToolCallID && len(m.Content) == len(c.Content) && m.StopReason == c.StopReason
}

func countUsers(msgs []convo.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].IsUser() {
			n++
		}
	}
	return n
}

func checkRoles(msgs []convo.Message) error {
	for i := range msgs {
		if _, ok := roleKind(msgs[i].Role); !ok {
			return fmt.Errorf("%w: message %d has role %q", ErrInvalid, i, msgs[i].Role)
		}
	}
	return nil
}

// applyEdit runs edit on h and restores the fields the store owns.
func applyEdit(h *Header, edit func(*Header)) error {
	if edit == nil {
		return nil
	}
	owned := *h
	edit(h)
	h.Format, h.Version, h.ID, h.WorkspaceID, h.Cwd, h.CreatedAt = owned.Format, owned.Version, owned.ID, owned.WorkspaceID, owned.Cwd, owned.CreatedAt
	h.MessageCount, h.UserMessageCount, h.MessagesBytes, h.MessagesCRC = owned.MessageCount, owned.UserMessageCount, owned.MessagesBytes, owned.MessagesCRC
	h.RuntimeCount, h.RuntimeBytes, h.RuntimeCRC = owned.RuntimeCount, owned.RuntimeBytes, owned.RuntimeCRC
	h.TimingsCount, h.TimingsBytes, h.TimingsCRC = owned.TimingsCount, owned.TimingsBytes, owned.TimingsCRC
	h.Migration = owned.Migration
	if err := h.validateMeta(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// appendAndPublish is the commit protocol for a session on disk.
func (s *Session) appendAndPublish(b encodedBatch, next *Header) error {
	if s.diskAhead {
		// A failed commit may have left a header naming a longer range
		// durable on disk. Publish the committed one before truncating
		// anything, or a crash could leave a header past the end of a log.
		if err := s.publish(&s.hdr, s.committedLegacy()); err != nil {
			return err
		}
		s.diskAhead = false
	}
	if s.tmF == nil && len(b.timings) > 0 {
		if err := s.createTimingsFile(); err != nil {
			return err
		}
	}
	logs := []struct {
		f         fsys.File
		name      string
		committed int64
		data      []byte
	}{
		{s.msgF, messagesFile, s.hdr.MessagesBytes, nil}, // b.writeLines
		{s.idxF, indexFile, int64(s.hdr.ownMessages()) * indexRecordSize, b.index},
		{s.rtF, runtimeFile, s.hdr.RuntimeBytes, b.rt},
		{s.tmF, timingsFile, s.hdr.TimingsBytes, b.timings},
	}
	// Cut every log back to its committed size: a failed commit (or a
	// crash before Open) may have left an unpublished tail. The fstat this
	// takes also catches a log that lost committed bytes, which must stop
	// the writer, not be padded.
	for _, l := range logs {
		if l.f == nil {
			continue // no timings.jsonl yet, and nothing to write to it
		}
		if err := truncateTail(l.f, filepath.Join(s.dir, l.name), l.committed); err != nil {
			return err
		}
	}
	// Append: write the new bytes right after the committed range.
	// Nothing reads them until the header names them; a long message's
	// line goes a piece at a time, and a failure part way leaves a tail
	// that the next commit or Open cuts off, as a torn write would.
	if err := b.writeLines(s.msgF, s.hdr.MessagesBytes, s.hdr.MessagesCRC); err != nil {
		return fmt.Errorf("append to %s: %w", filepath.Join(s.dir, messagesFile), err)
	}
	for _, l := range logs[1:] {
		if len(l.data) == 0 {
			continue
		}
		if _, err := l.f.WriteAt(l.data, l.committed); err != nil {
			return fmt.Errorf("append to %s: %w", filepath.Join(s.dir, l.name), err)
		}
	}
	// Observers learn of the change before its header is published, and
	// may make their record of it durable while the logs are
	// (store/observer.go).
	pubs := s.publishing(&s.hdr, next)
	for i, l := range logs {
		if len(l.data) == 0 && (i > 0 || b.size == 0) {
			continue
		}
		// fsync the log: its new bytes must be durable before a header
		// that names them is published.
		if err := l.f.Sync(); err != nil {
			pubs.done(false)
			return fsys.PathError("fsync", filepath.Join(s.dir, l.name), err)
		}
	}
	return s.publishWith(next, nil, pubs)
}

// committedLegacy is what the committed header.json holds of the prompt
// timings: all of them for a session not yet migrated, else nil.
func (s *Session) committedLegacy() []PromptTiming {
	if s.legacyTimings {
		return s.timings
	}
	return nil
}

// createTimingsFile creates timings.jsonl for a session written before it
// existed, and fsyncs the directory, so that the file's entry is durable
// before a header that names its bytes is published.
func (s *Session) createTimingsFile() error {
	path := filepath.Join(s.dir, timingsFile)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fsys.PathError("create", path, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		f.Close()
		return fsys.PathError("fsync dir", s.dir, err)
	}
	s.tmF = f
	return nil
}

// truncateTail cuts a log back to its committed size, dropping bytes an
// unpublished commit left. A log shorter than its committed range means
// the header points past its end: the store refuses to write rather than
// fill the gap.
func truncateTail(f fsys.File, path string, committed int64) error {
	fi, err := f.Stat()
	if err != nil {
		return fsys.PathError("stat", path, err)
	}
	switch {
	case fi.Size() < committed:
		return malformed(path, "file has %d bytes, header names %d", fi.Size(), committed)
	case fi.Size() > committed:
		// Truncate the unpublished tail; the fsync after the next append
		// makes the new size durable with the new bytes.
		if err := f.Truncate(committed); err != nil {
			return fmt.Errorf("truncate %s: %w", path, err)
		}
	}
	return nil
}

// publish atomically replaces header.json with h (temporary file, fsync,
// rename, directory fsync). If only the directory fsync fails, the new
// header is already visible: publish puts the committed header back so that
// readers see the previous state, and remembers (diskAhead) when it could
// not make that durable.
//
// legacy is the prompt timings h itself holds: those of a session not yet
// migrated to timings.jsonl, for a save that is not a commit; else nil.
func (s *Session) publish(h *Header, legacy []PromptTiming) error {
	var pubs publications
	if h != &s.hdr {
		pubs = s.publishing(&s.hdr, h)
	}
	return s.publishWith(h, legacy, pubs)
}

// publishWith is publish with the observers' parts of the change begun
// (Session.publishing); it ends them.
func (s *Session) publishWith(h *Header, legacy []PromptTiming, pubs publications) error {
	data, err := encodeHeader(h, legacy)
	if err != nil {
		pubs.done(false)
		return err
	}
	path := filepath.Join(s.dir, headerFile)
	// The observers' records of the change must be in place before anyone
	// can read the header.
	pubs.ready()
	err = writeFileAtomic(s.fs, path, data, 0o600)
	var pub *publishedError
	if errors.As(err, &pub) && h != &s.hdr {
		old, encErr := encodeHeader(&s.hdr, s.committedLegacy())
		if encErr != nil || writeFileAtomic(s.fs, path, old, 0o600) != nil {
			s.diskAhead = true
		}
	}
	pubs.done(err == nil)
	if err != nil {
		return fmt.Errorf("publish header: %w", err)
	}
	return nil
}

// SaveMeta changes header metadata only (title, pin, read, archive, model,
// effort, permission, compaction): it rewrites header.json atomically and
// leaves the logs untouched (a session not yet migrated keeps its prompt
// timings in header.json until its next Commit). UpdatedAt changes only if edit
// changes it. A draft or in-memory session keeps the change in memory (a
// draft writes it with its first commit). On failure the previous metadata
// stays, in memory and on disk.
func (s *Session) SaveMeta(edit func(*Header)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	next := s.hdr.clone()
	if err := applyEdit(&next, edit); err != nil {
		return err
	}
	return s.saveHeader(next)
}

// saveHeader makes next the session's header: in memory only for drafts
// and in-memory sessions, else published first.
func (s *Session) saveHeader(next Header) error {
	if s.kind == onDisk {
		if err := s.publish(&next, s.committedLegacy()); err != nil {
			return err
		}
		// next names the committed range, so whatever a failed commit
		// left published is superseded, durably.
		s.diskAhead = false
	}
	s.install(next, nil, nil, nil)
	if s.kind == onDisk {
		s.feed.savedMeta(filepath.Dir(s.dir), &s.hdr)
	}
	return nil
}

// createOnDisk writes a session directory for the first time: the logs and
// the header go into a private temporary directory, which is fsynced and
// renamed into place, then its parent is fsynced. The session appears whole
// or not at all. all, allRT and allTimings are the complete history; b
// encodes them.
func (s *Session) createOnDisk(all []convo.Message, allRT []RuntimeRecord, allTimings []PromptTiming, next Header, batch ...encodedBatch) (err error) {
	if s.invalid != nil {
		return s.invalid
	}
	// A fork's base is never opened as a session (store/forkbase.go):
	// it holds a parent's part, whose cwd may be gone.
	if !s.base {
		if err := checkCwd(next.Cwd); err != nil {
			return err
		}
	}
	var b encodedBatch
	if len(batch) > 0 {
		b = batch[0]
	}
	scope := filepath.Dir(s.dir)
	if s.orphan != "" {
		if err := s.dropOrphan(); err != nil {
			return err
		}
	}
	if err := fsys.EnsureDir(s.fs, scope); err != nil {
		return fsys.PathError("create", scope, err)
	}
	tmp, lock, err := lockedTemp(s.fs, scope, s.hdr.ID)
	if err != nil {
		return err
	}
	var files []fsys.File
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			if lock != nil {
				// Remove the temporary directory before its lock goes:
				// an unlocked one may be another creator's.
				s.fs.RemoveAll(tmp)
				lock.Close()
			}
		}
	}()
	for _, l := range []struct {
		name string
		data []byte
	}{{messagesFile, nil}, {indexFile, b.index}, {runtimeFile, b.rt}, {timingsFile, b.timings}} {
		path := filepath.Join(tmp, l.name)
		f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fsys.PathError("create", path, err)
		}
		files = append(files, f)
		if l.name == messagesFile {
			// Long lines go a piece at a time (writeLines).
			if err := b.writeLines(f, 0, next.baseCRC()); err != nil {
				return fsys.PathError("write", path, err)
			}
		} else if len(l.data) > 0 {
			// Write the whole first history.
			if _, err := f.WriteAt(l.data, 0); err != nil {
				return fsys.PathError("write", path, err)
			}
		}
		// fsync the log before anything names it.
		if err := f.Sync(); err != nil {
			return fsys.PathError("fsync", path, err)
		}
	}
	data, err := encodeHeader(&next, nil)
	if err != nil {
		return err
	}
	// The directory is not visible yet, so the header is written in place.
	hpath := filepath.Join(tmp, headerFile)
	hf, err := s.fs.OpenFile(hpath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fsys.PathError("create", hpath, err)
	}
	// Write and fsync the header before the rename publishes the directory.
	if err := fsys.WriteSyncClose(hf, hpath, data); err != nil {
		return err
	}
	// fsync the temporary directory: its five entries must be durable
	// before the rename makes them the session.
	if err := s.fs.SyncDir(tmp); err != nil {
		return fsys.PathError("fsync dir", tmp, err)
	}
	// rename publishes the session directory atomically. It never
	// replaces a session: if another creator of the same id (a concurrent
	// migration of one file) got there first, this one fails and changes
	// nothing.
	// Observers learn of the session before it appears.
	pubs := s.publishing(nil, &next)
	pubs.ready()
	defer func() {
		if err != nil {
			pubs.done(false)
		}
	}()
	if err := s.fs.Rename(tmp, s.dir); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("%w: %s", errSessionExists, s.dir)
		}
		return fsys.PathError("rename", tmp, err)
	}
	// fsync the scope directory: the rename is otherwise only in memory.
	if err := s.fs.SyncDir(scope); err != nil {
		// The session is visible but maybe not durable: take it back so
		// the draft stays a draft, as the caller is told.
		if s.fs.Rename(s.dir, tmp) != nil {
			// It stays visible. Keep its lock, so that no other handle
			// writes to a session this one reports as not created; the
			// next attempt or Delete removes it under that lock.
			s.orphan, s.orphanLock, lock = s.dir, lock, nil
		}
		return fsys.PathError("fsync dir", scope, err)
	}
	s.msgF, s.idxF, s.rtF, s.tmF = files[0], files[1], files[2], files[3]
	s.lock = lock
	s.mu.Lock()
	s.kind = onDisk
	s.hdr = next
	s.msgs = all
	s.rt = allRT
	s.timings = allTimings
	s.mu.Unlock()
	pubs.done(true)
	s.committed()
	return nil
}

// errSessionExists: a first commit found a session directory with its id
// in place (another creator of the same id published first).
var errSessionExists = errors.New("session directory exists already")

// lockedTemp makes and locks a temporary directory for creating session id
// in scope. Its name, .tmp-<id>-<random>, is this attempt's alone: no
// other creator (another process migrating the same file) uses or removes
// it, and it is removed only under its lock.
func lockedTemp(fs fsys.FS, scope, id string) (string, io.Closer, error) {
	tmp := filepath.Join(scope, ".tmp-"+id+"-"+randomSuffix())
	if err := fs.Mkdir(tmp, 0o700); err != nil {
		return "", nil, fsys.PathError("create", tmp, err)
	}
	lock, err := fs.Lock(tmp)
	if err != nil {
		// Made a moment ago under a name no one else uses: still ours.
		fs.RemoveAll(tmp)
		return "", nil, fmt.Errorf("lock %s: %w", tmp, err)
	}
	return tmp, lock, nil
}

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return hex.EncodeToString(b[:])
}

// dropOrphan removes the directory a failed first commit left visible. The
// draft holds its lock all along, so no other writer can have adopted it:
// hide it (rename), fsync the scope, remove it, then release the lock. The
// orphan is gone from the draft's view unless the rename fails.
func (s *Session) dropOrphan() error {
	scope := filepath.Dir(s.orphan)
	hidden := filepath.Join(scope, ".deleted-"+s.hdr.ID+"-"+randomSuffix())
	if err := s.fs.Rename(s.orphan, hidden); err != nil {
		return fmt.Errorf("remove %s left by a failed commit: %w", s.orphan, err)
	}
	s.orphan = ""
	err := s.fs.SyncDir(scope)
	if err != nil {
		err = fmt.Errorf("remove %s left by a failed commit: fsync dir: %w", s.dir, err)
	}
	// A tree that cannot be removed stays hidden, like one a crash left.
	s.fs.RemoveAll(hidden)
	s.orphanLock.Close()
	s.orphanLock = nil
	return err
}

// checkCwd reports ErrCwdMissing unless cwd is an existing directory.
func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("%w: cwd %q is not an absolute path", ErrInvalid, cwd)
	}
	fi, err := os.Stat(cwd)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s", ErrCwdMissing, cwd)
	}
	return nil
}
