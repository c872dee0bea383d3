package store

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

type sessionKind int

const (
	inMemory sessionKind = iota // never touches disk
	draft                       // nothing on disk until a commit holds a user message
	onDisk                      // a session directory exists
)

// Session is one conversation's history and metadata. One writer per
// session: a mutex (the write queue) serializes every write, so a history
// commit, a title, a read receipt and a pin never interleave or lose each
// other's fields. Reads never wait for a write's disk I/O. It is safe for
// concurrent use.
type Session struct {
	// wmu is the write queue: every write holds it from start to end, disk
	// I/O included. mu guards what readers see (hdr, msgs, rt, kind) and is
	// held only to copy or replace those, never across I/O. A write
	// replaces them holding both; holding wmu alone it may read them, since
	// only writes change them. Lock order: wmu, then mu.
	wmu      sync.Mutex
	mu       sync.Mutex
	id       string // immutable copy of hdr.ID, readable without the lock
	fs       fsys.FS
	now      func() time.Time
	kind     sessionKind
	dir      string // the session directory (target directory of a draft)
	readOnly error  // why writes are refused (ErrSessionLocked, ErrNotWritable), nil when writable; changed by relock.go holding wmu and mu
	closed   bool
	invalid  error // a draft made with bad arguments fails its first write

	hdr  Header          // committed header, plus accepted metadata of drafts
	msgs []convo.Message // committed history
	rt   []RuntimeRecord // committed runtime records
	// timings are the committed prompt timings. Readers share the slice
	// (Timings): a commit appends past its length or, to replace one,
	// installs a copy; it never writes an element a reader can see.
	timings []PromptTiming
	// legacyTimings: the committed header.json still holds the timings
	// (written before timings.jsonl); the next commit moves them.
	legacyTimings bool
	// feed is the opening Root's observers (none for in-memory sessions),
	// and taken, per observer, the first message it has not taken from
	// this handle: what the handle loaded, then what it was given. A
	// delivery that failed leaves it behind, and the next commit offers
	// from there (store/observer.go).
	feed  feed
	taken []int
	// announced is a copy of the header a publish announces to the feed
	// (Session.publishing), and event the commit it reports
	// (Session.committed): handing the observers pointers to these, not to
	// the writer's own values, keeps those off the heap.
	announced Header
	event     Commit

	lock            io.Closer // flock on dir; nil when read-only or not on disk
	msgF, idxF, rtF fsys.File // open logs of a writable on-disk session
	tmF             fsys.File // timings.jsonl; nil until created for an old session
	diskAhead       bool      // header.json may durably name a range past the committed one
	tenure          int       // how many times this handle let go of its lock (LetGo)
	orphan          string    // draft: a directory left by a failed first commit
	orphanLock      io.Closer // the orphan's flock, held until it is removed

	// ckpt is the session's file checkpoints (filecheckpoints.go), made
	// on first use; guarded by mu.
	ckpt *FileCheckpoints

	// stored is the queue.json read when this handle took the lock
	// (store/queue.go); guarded by mu.
	stored QueueState
	// qbuf is the encoder's buffer of queue.json, kept between writes
	// (under wmu).
	qbuf []byte
	// journal is the journal of the run in progress (journal.go), opened
	// by the first run's BeginJournal; set holding wmu.
	journal *Journal
	// recovered is what this handle's open recovered from a crashed
	// process's journal (recover.go), nil when nothing.
	recovered *JournalRecovery

	// base: this handle reads or writes a fork's base (store/fork.go),
	// whose directory is not named after its id and whose cwd is not
	// checked. keepChain: load keeps the
	// log's bytes in chain, for a fork's checks and copies; only
	// short-lived read-only handles do.
	// newID makes the ids of the forks this handle makes (the opening
	// Root's); nil: random ones.
	newID func() string

	base      bool
	keepChain bool
	linesOnly bool
	chain     *chain
}

// InMemory returns a session with empty history that never touches disk.
func InMemory(cwd string) *Session {
	now := time.Now
	id := newID()
	return &Session{id: id, fs: fsys.OS{}, now: now, kind: inMemory, hdr: newHeader(id, "", absOrEmpty(cwd), now().UnixMilli())}
}

// Draft returns a session with a stable id and target directory. Nothing is
// written until a Commit holds a user message (attachment-only messages
// count): that commit creates the directory with the same id and every
// metadata edit accepted in memory meanwhile. An unsaved draft does not
// survive the process.
func (r *Root) Draft(workspaceID, cwd string) *Session {
	id := r.newID()
	s := &Session{id: id, fs: r.fs, now: r.now, kind: draft, hdr: newHeader(id, workspaceID, absOrEmpty(cwd), r.nowMs()), newID: r.newID}
	s.feed = r.feed()
	s.taken = s.feed.taken(0)
	dir, err := r.sessionDir(workspaceID, id)
	if err != nil {
		s.invalid = err
	} else if !filepath.IsAbs(s.hdr.Cwd) {
		s.invalid = fmt.Errorf("%w: cwd %q", ErrInvalid, cwd)
	}
	s.dir = dir
	return s
}

// Create makes an empty persistent session: its directory and header are
// written at once. cwd must be an existing directory: for a session of a
// workspace, the workspace's (ErrInvalid otherwise; ErrWorkspaceNotFound
// when it is not registered).
func (r *Root) Create(workspaceID, cwd string) (*Session, error) {
	if err := r.checkSessionCwd(workspaceID, cwd); err != nil {
		return nil, err
	}
	s := r.Draft(workspaceID, cwd)
	if err := s.Persist(); err != nil {
		return nil, err
	}
	return s, nil
}

// Persist writes a draft to disk now, with empty history and the metadata
// accepted in memory so far, as Create does: from then on it is an
// ordinary session that outlives the process. Lists still leave it out
// until it holds a user message (ListOptions). A session already on disk
// is left as it is; an in-memory one has no place on disk.
func (s *Session) Persist() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.persistLocked("")
}

// PersistForRun is Persist for a draft's first accepted prompt, the one
// of run runID: its header names the run (pendingRun) until the run's
// commit, so that lists show the session while the run's messages are
// only in its journal, and after a crash until an open recovers them
// (docs/storage.md, "The journal of the run in progress").
func (s *Session) PersistForRun(runID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.persistLocked(runID)
}

// persistLocked is Persist, the header naming pendingRun ("" for none);
// call it holding wmu.
func (s *Session) persistLocked(pendingRun string) error {
	switch s.kind {
	case onDisk:
		return nil
	case inMemory:
		return fmt.Errorf("%w: an in-memory session cannot be persisted", ErrInvalid)
	}
	if err := s.writable(); err != nil {
		return err
	}
	if s.invalid != nil {
		return s.invalid
	}
	// The timings a draft committed in memory are written with it.
	var b encodedBatch
	var err error
	if b.timings, err = encodeTimings(indexed(s.timings)); err != nil {
		return err
	}
	next := s.hdr.clone()
	next.PendingRun = pendingRun
	setRange(&next, b, 0, 0, len(s.timings), &Header{})
	return s.createOnDisk(nil, nil, s.timings, next, b)
}

func newHeader(id, workspaceID, cwd string, now int64) Header {
	return Header{
		Format: FormatName, Version: FormatVersion, ID: id, WorkspaceID: wsPtr(workspaceID),
		Cwd: cwd, CreatedAt: now, UpdatedAt: now,
	}
}

func newID() string {
	// uuid.NewV7 fails only when the system's random source does; then
	// nothing else works either.
	return uuid.Must(uuid.NewV7()).String()
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Dir returns the session directory (a draft's target); "" in memory.
func (s *Session) Dir() string { return s.dir }

// Header returns a copy of the header, including accepted in-memory
// metadata of drafts. It costs the same however long the session: the
// prompt timings are read with Timings.
func (s *Session) Header() Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdr.clone()
}

// Permission returns the header's permission preset, without copying the
// header.
func (s *Session) Permission() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdr.Permission
}

// Effort returns the header's effort, without copying the header.
func (s *Session) Effort() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdr.Effort
}

// Timings returns the committed prompt timings, oldest first. The slice is
// shared like Messages: callers must not modify its elements (appending is
// safe, its capacity is capped).
func (s *Session) Timings() []PromptTiming {
	return s.TimingsFrom(0)
}

// TimingsFrom returns the committed prompt timings from index i on (none
// when i is past the end), shared like Timings.
func (s *Session) TimingsFrom(i int) []PromptTiming {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.timings)
	i = min(max(i, 0), n)
	return s.timings[i:n:n]
}

// Summary returns the list summary of the session's current header.
func (s *Session) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdr.Summary()
}

// Messages returns the committed history. The slice is shared: callers must
// not modify its elements (appending is safe, its capacity is capped).
func (s *Session) Messages() []convo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs[:len(s.msgs):len(s.msgs)]
}

// Runtime returns the committed runtime records, shared like Messages.
func (s *Session) Runtime() []RuntimeRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt[:len(s.rt):len(s.rt)]
}

// IsDraft reports whether the session has no directory on disk yet.
func (s *Session) IsDraft() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kind == draft
}

// Persistent reports whether the session is stored on disk (now or, for a
// draft, at its first commit).
func (s *Session) Persistent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kind != inMemory
}

// ReadOnly reports whether the session is read-only: another writer held
// its lock (writes return ErrSessionLocked), or its files could not be
// written (writes return ErrNotWritable), when it opened or when a write
// last tried again (TryWritable). Reads work either way.
func (s *Session) ReadOnly() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly != nil
}

// ReadOnlyReason is the error a write of a read-only session returns
// (wrapping ErrSessionLocked or ErrNotWritable) unless it can be written
// again by then; nil when it is writable.
func (s *Session) ReadOnlyReason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly
}

// Close releases the session's lock and files. Later writes return
// ErrClosed; reads keep working.
func (s *Session) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.release()
}

// release closes the logs and the lock.
func (s *Session) release() error {
	first := s.closeJournal()
	for _, c := range []io.Closer{s.msgF, s.idxF, s.rtF, s.tmF, s.lock, s.orphanLock} {
		if c != nil {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	s.msgF, s.idxF, s.rtF, s.tmF, s.lock, s.orphanLock = nil, nil, nil, nil, nil, nil
	return first
}

// closeLogs closes the logs opened for writing, for a handle that turns
// read-only.
func (s *Session) closeLogs() {
	for _, f := range []fsys.File{s.msgF, s.idxF, s.rtF, s.tmF} {
		if f != nil {
			f.Close()
		}
	}
	s.msgF, s.idxF, s.rtF, s.tmF = nil, nil, nil, nil
}

// writable returns why the session cannot be written, or nil. A
// read-only session tries again first (relock). Call it holding wmu.
func (s *Session) writable() error {
	switch {
	case s.closed:
		return fmt.Errorf("%w: %s", ErrClosed, s.hdr.ID)
	case s.readOnly != nil:
		s.relock()
		return s.readOnly
	}
	return nil
}

// nextID is the id of a new fork of this session.
func (s *Session) nextID() string {
	if s.newID != nil {
		return s.newID()
	}
	return newID()
}
