package fsys

import (
	"errors"
	"io"
	"os"
)

// FS is the seam between the store (and its indexes) and the operating
// system. Every durability step (write, fsync, rename, directory fsync)
// goes through it so that tests can fail any single step and check what
// survives.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	ReadFile(name string) ([]byte, error)
	// ReadHead reads the start of a file into head and returns the filled
	// part; whole reports that this is the whole file. When it is not,
	// end holds the file's last bytes (up to len(tail), read into tail)
	// through the same open file, so both parts belong to one version.
	ReadHead(name string, head, tail []byte) (data []byte, whole bool, end []byte, err error)
	Rename(oldpath, newpath string) error
	Mkdir(name string, perm os.FileMode) error
	RemoveAll(name string) error
	Stat(name string) (os.FileInfo, error)
	ReadDir(name string) ([]os.DirEntry, error) // in directory order
	// SyncDir fsyncs a directory so that the entries created, renamed or
	// removed in it survive a crash.
	SyncDir(name string) error
	// Lock takes an exclusive advisory lock (flock) on a directory without
	// waiting. It returns ErrWouldBlock when another open file description
	// holds it. Closing the returned handle releases the lock.
	Lock(dir string) (io.Closer, error)
	// LockShared takes a shared flock on a directory, waiting for an
	// exclusive holder to let go (the summary index's writers,
	// store/internal/summary/writer.go).
	LockShared(dir string) (io.Closer, error)
}

// File is the part of *os.File the store and its indexes use.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	Sync() error
	Truncate(size int64) error
	Chmod(mode os.FileMode) error
	Stat() (os.FileInfo, error)
	Close() error
}

// ErrWouldBlock is what Lock returns when another open file description
// holds the lock.
var ErrWouldBlock = errors.New("lock held by another open file")
