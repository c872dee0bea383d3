package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"

	"github.com/loopdev/loop/store/internal/fsys"
)

// A session opened read-only (docs/storage.md, Lock) does not stay so for
// the life of its handle: the writer that held its lock may close it, and
// a file system may become writable again. So every write of a read-only
// handle first tries again to take the lock and open the logs for
// writing. The handle becomes writable in place only when the disk still
// holds exactly what it read; if another writer changed the session
// meanwhile, what the handle holds is out of date and it stays read-only
// with ErrStale: the caller opens the session again.

// TryWritable tries again, as the next write would, to make a session
// opened read-only writable, and returns why it still is not: nil when it
// is writable now (or always was), else the error a write would return
// (ErrSessionLocked, with ErrStale when the session changed since this
// handle read it; ErrNotWritable; ErrClosed).
func (s *Session) TryWritable() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writable()
}

// relock is TryWritable's work: it takes the lock and, if the header on
// disk is the one this handle holds, opens the logs for writing. It sets
// s.readOnly to the outcome. Call it holding wmu, with s.readOnly set.
func (s *Session) relock() { s.relockWith(false) }

// relockWith is relock; with catchUp (Relock), a header that changed
// since this handle read it does not leave the handle stale when the logs
// hold a continuation of its history: that is read and installed
// (letgo.go), and a journal a crashed writer left is reported (journal),
// for the caller to recover once it lets go of wmu.
func (s *Session) relockWith(catchUp bool) (journal bool) {
	if s.kind != onDisk {
		return false
	}
	lock, err := s.fs.Lock(s.dir)
	if errors.Is(err, fsys.ErrWouldBlock) {
		s.setReadOnly(fmt.Errorf("%w: %s", ErrSessionLocked, s.dir))
		return false
	}
	if err != nil {
		// Gone or unreachable: the reason it had stands.
		return false
	}
	hpath := filepath.Join(s.dir, headerFile)
	data, err := s.fs.ReadFile(hpath)
	var h Header
	var legacy []PromptTiming
	if err == nil {
		h, legacy, err = parseHeaderTimings(data, hpath)
	}
	if err == nil && h.PendingFork != "" && s.hdr.PendingFork == "" && !exists(s.fs, filepath.Join(s.dir, forkDirPrefix+h.PendingFork)) {
		// This handle moved that rewind's fork into the scope and forgot
		// it (finishPendingFork); the header on disk names it until the
		// next header written. It is no change by another writer.
		h.PendingFork = ""
	}
	same := err == nil && reflect.DeepEqual(h, s.hdr)
	if err != nil || !same && (!catchUp || len(legacy) > 0) {
		lock.Close()
		s.setReadOnly(fmt.Errorf("%w: %w: %s", ErrSessionLocked, ErrStale, s.dir))
		return false
	}
	files, err := s.openLogsForWriting()
	if err != nil {
		lock.Close()
		if errors.Is(err, ErrNotWritable) {
			s.setReadOnly(err)
		}
		return false
	}
	closeFiles := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	var t tail
	if !same {
		if t, err = s.readTail(files, &h); err != nil {
			closeFiles()
			lock.Close()
			s.setReadOnly(fmt.Errorf("%w: %w: %s: %w", ErrSessionLocked, ErrStale, s.dir, err))
			return false
		}
	}
	q, err := s.readQueue(s.id)
	if err != nil {
		closeFiles()
		lock.Close()
		s.setReadOnly(queueRefused(err))
		return false
	}
	if !same {
		s.installTail(h, t)
	}
	s.msgF, s.idxF, s.rtF, s.tmF = files[0], files[1], files[2], files[3]
	if err := s.journalWaiting(); err != nil {
		if catchUp && errors.Is(err, ErrStale) {
			// A writer died in a run, and this handle holds the history
			// it committed: the caller recovers the run (Relock).
			journal = true
		} else {
			// A writer died in a run: opening the session again recovers it
			// (recover.go); this handle's history predates it.
			s.closeLogs()
			lock.Close()
			s.setReadOnly(err)
			return false
		}
	}
	s.lock = lock
	s.mu.Lock()
	s.stored = q
	s.mu.Unlock()
	s.setReadOnly(nil)
	return journal
}

// openLogsForWriting opens the four logs for reading and writing, as a
// writable Open does (timings.jsonl only if it exists: a session written
// before it has none until its next commit). EROFS, EACCES and EPERM are
// ErrNotWritable.
func (s *Session) openLogsForWriting() ([4]fsys.File, error) {
	var files [4]fsys.File
	for i, name := range []string{messagesFile, indexFile, runtimeFile, timingsFile} {
		path := filepath.Join(s.dir, name)
		f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil && name == timingsFile && errors.Is(err, os.ErrNotExist) && s.hdr.TimingsBytes == 0 {
			continue
		}
		if err != nil {
			for _, f := range files[:i] {
				f.Close()
			}
			if errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission) {
				return files, fmt.Errorf("%w: %w", ErrNotWritable, err)
			}
			return files, fmt.Errorf("open %s: %w", path, err)
		}
		files[i] = f
	}
	return files, nil
}

func (s *Session) setReadOnly(why error) {
	s.mu.Lock()
	s.readOnly = why
	s.mu.Unlock()
}
