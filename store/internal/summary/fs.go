package summary

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
)

// FS is the part of the store's file-system seam (store/fs.go) the index
// goes through, so that the store's fault tests reach its every step.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	ReadFile(name string) ([]byte, error)
	Rename(oldpath, newpath string) error
	RemoveAll(name string) error
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory so that a rename in it survives a crash.
	SyncDir(name string) error
	// Lock takes an exclusive flock on a directory without waiting (an
	// error when another open file description holds it); closing the
	// handle releases it.
	Lock(dir string) (io.Closer, error)
	// LockShared takes a shared flock on a directory, waiting for an
	// exclusive holder to let go.
	LockShared(dir string) (io.Closer, error)
}

// File is the part of an open file the index uses.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// Index is one view of the summary indexes of a data root's scopes: the
// file system it goes through and what its owner knows of them beyond the
// files (Marks; nil marks nothing). It is a value: the store makes one per
// use from its current seam.
type Index struct {
	FS    FS
	Marks *Marks
}

// createUnique creates a new file named prefix plus a random suffix,
// as the store's createUnique does (store/fs.go): the sweep
// (store/sweep.go) knows the name.
func createUnique(fs FS, prefix string) (File, string, error) {
	for try := 0; ; try++ {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && try < 10000 {
			continue
		}
		return f, name, err
	}
}

// writeSyncClose writes data to f (named name), fsyncs it and closes it.
// f is closed on every path.
func writeSyncClose(f File, name string, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	return nil
}
