package fsys

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// EnsureDir creates dir and any missing parents with mode 0700, fsyncing
// each parent so the directory survives a crash. It fsyncs the parent also
// when dir exists already: whoever made it (another process) may not have
// fsynced it yet, and what the caller makes durable inside must not vanish
// with its directory.
func EnsureDir(fs FS, dir string) error {
	parent := filepath.Dir(dir)
	if fi, err := fs.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		// fsync the parent: the entry may still be only in memory.
		return fs.SyncDir(parent)
	}
	if parent != dir {
		if err := EnsureDir(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// fsync the parent: the new entry (ours, or another creator's that won
	// the race) is otherwise only in memory.
	return fs.SyncDir(parent)
}

// PathError is err, a failure of op on path, as the error to return. An
// *os.PathError or *os.LinkError about path already says both; wrapping
// it again would name the path twice ("create X: open X: is a
// directory"), so it is returned as it is.
func PathError(op, path string, err error) error {
	switch e := err.(type) {
	case *os.PathError:
		if e.Path == path {
			return err
		}
	case *os.LinkError:
		if e.Old == path || e.New == path {
			return err
		}
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// CreateUnique creates a new file named prefix plus a random suffix, as
// os.CreateTemp does, through fs. Callers pass <name>.tmp- as the prefix:
// the sweep (store/sweep.go) knows that name and removes the ones a crash
// leaves (docs/storage.md).
func CreateUnique(fs FS, prefix string) (File, string, error) {
	for try := 0; ; try++ {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && try < 10000 {
			continue
		}
		return f, name, err
	}
}

// WriteSyncClose writes data to the new file f (named name), fsyncs it and
// closes it: its bytes are on disk before anything (a rename, a directory
// fsync) makes them visible. f is closed on every path.
func WriteSyncClose(f File, name string, data []byte) error {
	// Write the whole content.
	if _, err := f.Write(data); err != nil {
		f.Close()
		return PathError("write", name, err)
	}
	// fsync the file before it is published.
	if err := f.Sync(); err != nil {
		f.Close()
		return PathError("fsync", name, err)
	}
	if err := f.Close(); err != nil {
		return PathError("close", name, err)
	}
	return nil
}
