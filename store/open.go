package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Open restores a session of a scope ("" is the independent collection) and
// validates it: a malformed file is rejected with an error naming the file
// and the problem (ErrMalformed); the stored cwd must exist (ErrCwdMissing).
// It takes the session's lock; if another process (or another handle in
// this one) holds it, the session opens read-only and writes return
// ErrSessionLocked. If its logs cannot be opened for writing (a read-only
// file system), it opens read-only too, releases the lock, and writes
// return ErrNotWritable. An unknown id, or a session of another format or
// version, is ErrSessionNotFound.
func (r *Root) Open(workspaceID, id string) (*Session, error) {
	dir, err := r.sessionDir(workspaceID, id)
	if err != nil {
		return nil, err
	}
	return r.openDir(dir)
}

// OpenDir restores the session in exactly this directory, as Open does. A
// path to its header.json is accepted too.
func (r *Root) OpenDir(dir string) (*Session, error) {
	if filepath.Base(dir) == headerFile {
		dir = filepath.Dir(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalid, dir, err)
	}
	return r.openDir(abs)
}

func (r *Root) openDir(dir string) (*Session, error) {
	s := &Session{fs: r.fs, now: r.now, kind: onDisk, dir: dir, feed: r.feed(), newID: r.newID}
	lock, err := r.fs.Lock(dir)
	switch {
	case errors.Is(err, fsys.ErrWouldBlock):
		s.readOnly = fmt.Errorf("%w: %s", ErrSessionLocked, dir)
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, dir)
	case err != nil:
		return nil, fmt.Errorf("open session %s: %w", dir, err)
	}
	s.lock = lock
	if err := s.load(); err != nil {
		s.release()
		return nil, err
	}
	s.taken = s.feed.taken(len(s.msgs))
	if s.readOnly == nil {
		if err := s.recoverJournal(); err != nil {
			// The committed history opens read-only; the journal stays
			// as it is for someone to look at (docs/storage.md).
			s.closeLogs()
			s.readOnly = fmt.Errorf("%w: %w", ErrNotWritable, err)
		}
	}
	if s.readOnly == nil {
		// A rewind's header is published: its fork goes into the scope
		// if a crash stopped it on the way (store/rewind.go); if it
		// cannot yet, it waits for the next open, rewind or delete.
		_ = s.finishPendingFork(nil)
		if s.hdr.Parent != nil {
			s.dropBaseLeftovers()
		}
	}
	if errors.Is(s.readOnly, ErrNotWritable) && s.lock != nil {
		// Nobody can write these files, so the lock would only make a
		// second reader see "locked by another writer".
		s.lock.Close()
		s.lock = nil
	}
	return s, nil
}

// load reads and validates header.json and the committed range of the logs.
func (s *Session) load() error {
	hpath := filepath.Join(s.dir, headerFile)
	data, err := s.fs.ReadFile(hpath)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrSessionNotFound, s.dir)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", hpath, err)
	}
	h, legacy, err := parseHeaderTimings(data, hpath)
	if errors.Is(err, ErrUnsupportedFormat) {
		return fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	if err != nil {
		return err
	}
	if !s.base {
		if err := checkPlace(&h, s.dir, hpath); err != nil {
			return err
		}
	}
	// A fork's parent part (errProbe) is read for its lines and
	// timings: the directory that conversation worked in plays no part,
	// so a parent whose cwd is gone still gives its forks their part.
	if !errors.Is(s.readOnly, errProbe) {
		if err := checkCwd(h.Cwd); err != nil {
			return fmt.Errorf("open %s: %w", s.dir, err)
		}
	}

	files := make([]fsys.File, 0, 4)
	keep := false
	defer func() {
		if !keep {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
		}
	}()
	// optional: a log that sessions written before it existed lack (an
	// empty range then reads as nothing, with no file handle).
	read := func(name string, size int64, optional ...bool) ([]byte, error) {
		path := filepath.Join(s.dir, name)
		f, err := s.openLog(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if len(optional) > 0 && size == 0 {
					files = append(files, nil)
					return nil, nil
				}
				return nil, malformed(path, "missing")
			}
			if _, ok := err.(*os.PathError); ok {
				return nil, err // it names the operation and the file
			}
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		files = append(files, f)
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		if fi.Size() < size {
			return nil, malformed(path, "header names %d bytes, the file has %d", size, fi.Size())
		}
		// Bytes past size are an unpublished tail: ignored here, cut by
		// the next commit.
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return buf, nil
	}
	mpath := filepath.Join(s.dir, messagesFile)
	mdata, err := read(messagesFile, h.MessagesBytes)
	if err != nil {
		return err
	}
	if crc := fsys.CRC32C(h.baseCRC(), mdata); crc != h.MessagesCRC {
		return malformed(mpath, "checksum %08x of the committed range, header says %08x", crc, h.MessagesCRC)
	}
	own := h.ownMessages()
	isize := indexSize(own)
	if isize < 0 {
		return malformed(hpath, "messageCount %d is too large", h.MessageCount)
	}
	idx, err := read(indexFile, isize)
	if err != nil {
		return err
	}
	rpath := filepath.Join(s.dir, runtimeFile)
	rdata, err := read(runtimeFile, h.RuntimeBytes)
	if err != nil {
		return err
	}
	if crc := fsys.CRC32C(0, rdata); crc != h.RuntimeCRC {
		return malformed(rpath, "checksum %08x of the committed range, header says %08x", crc, h.RuntimeCRC)
	}
	tpath := filepath.Join(s.dir, timingsFile)
	tdata, err := read(timingsFile, h.TimingsBytes, true)
	if err != nil {
		return err
	}
	if crc := fsys.CRC32C(0, tdata); crc != h.TimingsCRC {
		return malformed(tpath, "checksum %08x of the committed range, header says %08x", crc, h.TimingsCRC)
	}
	// A fork's history starts with its parent's part (store/fork.go).
	pre, err := s.loadParent(&h, hpath)
	if err != nil {
		return err
	}
	base := 0
	if h.Parent != nil {
		base = h.Parent.MessageCount
	}
	var msgs []convo.Message
	users := 0
	if s.linesOnly {
		// The lines and their index records are checked, not decoded: a
		// fork or a rewind only copies and sums them (store/fork.go).
		if err := checkLines(mdata, base, own, idx, mpath, filepath.Join(s.dir, indexFile)); err != nil {
			return err
		}
	} else {
		if msgs, err = parseMessages(mdata, base, own, idx, mpath, filepath.Join(s.dir, indexFile)); err != nil {
			return err
		}
		users = countUsers(msgs)
		if pre.msgs != nil {
			if len(msgs) == 0 {
				msgs = pre.msgs
			} else {
				msgs = append(pre.msgs, msgs...)
			}
		}
	}
	var baseUsers int
	if h.Parent != nil {
		baseUsers = h.Parent.UserMessageCount
	}
	c := &chain{parent: pre.chain, base: base, baseUsers: baseUsers, baseCRC: h.baseCRC(), own: mdata, idx: idx, crc: h.MessagesCRC}
	if s.keepChain {
		s.chain = c
	}
	if s.linesOnly {
		users = c.usersAt(h.MessageCount) - baseUsers
	}
	if users += baseUsers; users != h.UserMessageCount {
		return malformed(hpath, "userMessageCount %d, the log holds %d user messages", h.UserMessageCount, users)
	}
	rt, err := parseRuntime(rdata, h.RuntimeCount, rpath)
	if err != nil {
		return err
	}
	if pre.timings != nil {
		legacy = pre.timings
	}
	timings, err := parseTimings(legacy, tdata, h.TimingsCount, tpath)
	if err != nil {
		return err
	}
	s.id, s.hdr, s.msgs, s.rt, s.timings = h.ID, h, msgs, rt, timings
	s.legacyTimings = len(legacy) > 0 && pre.timings == nil
	if s.readOnly == nil {
		// Only the lock's holder reads queue.json: a live writer's queue is
		// its own. One that cannot be applied keeps the session read-only,
		// so that no write replaces it.
		if s.stored, err = s.readQueue(h.ID); err != nil {
			s.readOnly = queueRefused(err)
		}
	}
	if s.readOnly == nil {
		s.msgF, s.idxF, s.rtF, s.tmF = files[0], files[1], files[2], files[3]
		keep = true
	}
	return nil
}

// openLog opens one of the session's logs: for reading and writing while
// the session is writable, else for reading. A log that cannot be opened
// for writing although it exists (EROFS; EACCES or EPERM from permission
// bits) makes the session read-only, with the reason every write returns:
// its committed history is still readable, as when another writer holds
// the lock.
func (s *Session) openLog(path string) (fsys.File, error) {
	if s.readOnly == nil {
		f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
		if err == nil || !(errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission)) {
			return f, err
		}
		s.readOnly = fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	return s.fs.OpenFile(path, os.O_RDONLY, 0)
}

// checkPlace checks that a header sits where it says it belongs:
// <scope>/<id>/header.json, with scope its workspace id or "global".
func checkPlace(h *Header, dir, hpath string) error {
	if filepath.Base(dir) != h.ID {
		return malformed(hpath, "id %s does not match directory %s", h.ID, filepath.Base(dir))
	}
	if scope := filepath.Base(filepath.Dir(dir)); scope != scopeName(h.WorkspaceID) {
		return malformed(hpath, "workspaceId %v does not match scope directory %s", scopeName(h.WorkspaceID), scope)
	}
	return nil
}

// ContinueRecent opens the most recently active unarchived session of the
// scope (empty ones included), or creates one in cwd if there is none. For
// a workspace, cwd must be the workspace's directory, as for Create: it is
// refused (ErrInvalid) whether or not a session is found, so the same
// call never depends on what the scope holds.
func (r *Root) ContinueRecent(workspaceID, cwd string) (*Session, error) {
	if err := r.checkSessionCwd(workspaceID, cwd); err != nil {
		return nil, err
	}
	id, found, err := r.MostRecent(workspaceID)
	if err != nil {
		return nil, err
	}
	if !found {
		return r.Create(workspaceID, cwd)
	}
	return r.Open(workspaceID, id)
}

// newer orders sessions by last activity, then id (uuid v7 ids grow with
// time), newest first.
func newer(a, b *Header) bool {
	if a.UpdatedAt != b.UpdatedAt {
		return a.UpdatedAt > b.UpdatedAt
	}
	return a.ID > b.ID
}
