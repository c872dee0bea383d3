package store

import (
	"errors"
	"fmt"
)

// Errors callers test with errors.Is. Every returned error wraps one of them
// when it applies, plus the path or id involved.
var (
	// ErrSessionNotFound: no session with that id in that scope, or the
	// session is stored in another format or version (excluded sessions are
	// not found; such errors also wrap ErrUnsupportedFormat).
	ErrSessionNotFound = errors.New("session not found")
	// ErrWorkspaceNotFound: no registered workspace with that id.
	ErrWorkspaceNotFound = errors.New("workspace not found")
	// ErrSessionLocked: another process (or another open handle) holds the
	// session's write lock; this handle is read-only.
	ErrSessionLocked = errors.New("session locked by another writer")
	// ErrNotWritable: the session's files cannot be opened for writing (a
	// read-only file system, or files this user may only read); this
	// handle is read-only.
	ErrNotWritable = errors.New("session files are not writable")
	// ErrStale: a handle opened read-only found the session's lock free
	// again, but another writer changed the session since the handle read
	// it, so it cannot become writable; open the session again. It comes
	// with ErrSessionLocked.
	ErrStale = errors.New("session changed on disk since it was opened")
	// ErrMalformed: a current-format file breaks the format. The error names
	// the file and the problem; the store never repairs or skips it.
	ErrMalformed = errors.New("malformed session file")
	// ErrCwdMissing: the session's stored working directory no longer exists.
	ErrCwdMissing = errors.New("session working directory missing")
	// ErrInvalid: an argument is out of range or not well formed.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnsupportedFormat: a file of another format or version.
	ErrUnsupportedFormat = errors.New("unsupported session format")
	// ErrClosed: the session handle was closed or its session deleted.
	ErrClosed = errors.New("session closed")
)

// malformed returns an ErrMalformed error naming the file and the problem.
func malformed(file, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, file, fmt.Sprintf(format, args...))
}

// ListError reports the current-format headers List could not read. List
// still returns every valid summary alongside it.
type ListError struct {
	Problems []error // each wraps ErrMalformed and names its file
}

func (e *ListError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	return fmt.Sprintf("%v (and %d more malformed session headers)", e.Problems[0], len(e.Problems)-1)
}

// Unwrap lets errors.Is(err, ErrMalformed) see the problems.
func (e *ListError) Unwrap() []error { return e.Problems }
