package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/store/internal/fsys"
)

// The store reaches the file system through one seam, fsys.FS
// (store/internal/fsys), which its indexes share; a Root holds it so that
// tests can fail any single durability step. This file holds the atomic
// replacement of a file the store builds on it.

// writeFileAtomic replaces path with data: write a temporary file in the
// same directory, fsync it, rename it over path, fsync the directory.
// Readers see the old or the new content, never a mix. The temporary name
// is fixed, <name>.tmp: every caller holds a lock that makes it the only
// writer of path (the session's flock for header.json, the root's for the
// registry), and the next write reuses a temporary file a crash left.
// WriteFileAtomic, which has no such lock, uses a unique name.
func writeFileAtomic(fs fsys.FS, path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fsys.PathError("create", tmp, err)
	}
	return publishTemp(fs, f, tmp, path, data)
}

// publishTemp writes data to the new temporary file f (named tmp), makes it
// durable and renames it over path.
func publishTemp(fs fsys.FS, f fsys.File, tmp, path string, data []byte) error {
	if err := fsys.WriteSyncClose(f, tmp, data); err != nil {
		return err
	}
	// rename is the atomic publication: readers see either file whole.
	if err := fs.Rename(tmp, path); err != nil {
		return fsys.PathError("rename", tmp, err)
	}
	// fsync the directory: the rename itself is otherwise only in memory.
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		return &publishedError{fsys.PathError("fsync dir", filepath.Dir(path), err)}
	}
	return nil
}

// publishedError marks a failure after the rename: the new content is
// already visible, only its durability is in doubt.
type publishedError struct{ err error }

func (e *publishedError) Error() string { return e.err.Error() }
func (e *publishedError) Unwrap() error { return e.err }

// WriteFileAtomic replaces path with data through a temporary file in the
// same directory (write, fsync, rename, fsync the directory), creating the
// directory (0700) if needed. Other packages use it for small settings files
// and recovery files. Two writers of one file, in one process or two, need
// no lock: each writes its own temporary file, so readers see one whole
// version, the last renamed. The file gets mode perm exactly (the umask does
// not apply). A failure before the rename (a full disk) leaves nothing
// behind: neither path nor the temporary file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileUnique(fsys.OS{}, path, data, perm)
}

func writeFileUnique(fs fsys.FS, path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := fsys.EnsureDir(fs, dir); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, tmp, err := fsys.CreateUnique(fs, path+".tmp-")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		fs.RemoveAll(tmp)
		return fsys.PathError("chmod", tmp, err)
	}
	err = publishTemp(fs, f, tmp, path, data)
	var pub *publishedError
	if err != nil && !errors.As(err, &pub) {
		// Not renamed: the unique temporary file would stay forever.
		fs.RemoveAll(tmp)
	}
	return err
}
