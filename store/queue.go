package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/store/internal/fsys"
)

// A session's queued inputs and the request ids it accepted last are kept
// in queue.json (docs/storage.md, "Queued inputs and request ids"), so
// that a process that opens the session after a crash or an exit gives the
// inputs back and answers a retried request id as the first process did.
// The engine owns what they mean; the store keeps the file: one small file
// replaced whole and atomically at each change, written only by the holder
// of the session's lock.

// QueueState is what queue.json holds: the queue in order and the accepted
// request ids, oldest first.
type QueueState struct {
	Items    []QueuedInput
	Requests []AcceptedRequest
}

// QueuedInput is one input waiting to run.
type QueuedInput struct {
	ID       string // its requestId
	RunID    string
	Text     string
	Images   []QueuedImage
	Files    []QueuedFile
	Skills   []string
	Steer    bool
	QueuedAt int64 // Unix ms
}

// QueuedImage is an image attached to a queued input.
type QueuedImage struct {
	Data     string // base64
	MimeType string
}

// QueuedFile is a text file attached to a queued input.
type QueuedFile struct {
	Name string
	Text string
}

// AcceptedRequest is one request id the session accepted: the digest of
// the content it was accepted with, the run it was given and whether it
// was queued.
type AcceptedRequest struct {
	ID     string
	Digest string // lower-case hex SHA-256, 64 characters
	RunID  string
	Queued bool
	// ForkedID is the fork an edit's rewind made (session/edit), which a
	// retried edit answers again; "" for a prompt.
	ForkedID string
}

// MaxAcceptedRequests bounds QueueState.Requests: a file naming more is
// malformed.
const MaxAcceptedRequests = 256

// SaveQueue replaces queue.json with q: write queue.json.tmp, fsync it,
// rename it over queue.json, fsync the session directory. It runs in the
// session's write queue, so it never interleaves with a commit. A draft
// or an in-memory session has no directory and writes nothing (nil): its
// queue lives in memory until it is on disk. A read-only session returns
// why, as every write does.
func (s *Session) SaveQueue(q *QueueState) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.kind != onDisk {
		return nil
	}
	if err := s.writable(); err != nil {
		return err
	}
	path := filepath.Join(s.dir, queueFile)
	if err := s.writeQueue(path, q); err != nil {
		// A failed directory fsync names the directory only.
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// writeQueue replaces path with q as writeFileAtomic does (the fixed
// temporary name: the lock's holder is the only writer), encoding it into
// the temporary file a piece at a time.
func (s *Session) writeQueue(path string, q *QueueState) error {
	if len(q.Requests) > MaxAcceptedRequests {
		return fmt.Errorf("%w: %d request ids, at most %d", ErrInvalid, len(q.Requests), MaxAcceptedRequests)
	}
	tmp := path + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fsys.PathError("create", tmp, err)
	}
	s.qbuf, err = encodeQueueTo(s.id, q, s.qbuf, func(p []byte) error {
		_, err := f.Write(p)
		return err
	})
	if err != nil {
		f.Close()
		return fsys.PathError("write", tmp, err)
	}
	// Written: fsync, close, rename, fsync the directory.
	return publishTemp(s.fs, f, tmp, path, nil)
}

// OnDisk reports whether the session has its directory: a session created,
// opened or committed, not a draft and not an in-memory one. Only then
// does SaveQueue write.
func (s *Session) OnDisk() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kind == onDisk
}

// StoredQueue is the queue.json this handle read when it took the
// session's lock (Open, or a read-only handle made writable again): the
// inputs and request ids a previous writer left. A handle that does not
// hold the lock reads nothing (the writer that holds it owns them); a
// session without the file has none.
func (s *Session) StoredQueue() QueueState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored
}

// readQueue reads and checks queue.json: a missing file is an empty state;
// one that is torn, corrupt, of another format or version, or of another
// session is refused with an error naming it (ErrMalformed, or
// ErrUnsupportedFormat), never applied.
func (s *Session) readQueue(id string) (QueueState, error) {
	path := filepath.Join(s.dir, queueFile)
	data, err := s.fs.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return QueueState{}, nil
	}
	if err != nil {
		return QueueState{}, fmt.Errorf("read %s: %w", path, err)
	}
	return decodeQueue(data, id, path)
}

// queueRefused is the reason a handle whose queue.json cannot be applied
// is read-only: writing would replace inputs and request ids it could not
// read. It wraps ErrNotWritable, as the other reasons a session's files
// cannot be written, and names the file.
func queueRefused(err error) error {
	return fmt.Errorf("%w: %w", ErrNotWritable, err)
}
