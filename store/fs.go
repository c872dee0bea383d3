package store

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/loopdev/loop/internal/flock"
)

// fsys is the seam between the store and the operating system. Every
// durability step (write, fsync, rename, directory fsync) goes through it so
// that tests can fail any single step and check what survives.
type fsys interface {
	OpenFile(name string, flag int, perm os.FileMode) (fileHandle, error)
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
	// waiting. It returns errWouldBlock when another open file description
	// holds it. Closing the returned handle releases the lock.
	Lock(dir string) (io.Closer, error)
	// LockShared takes a shared flock on a directory, waiting for an
	// exclusive holder to let go (the summary index's writers,
	// store/internal/summary/writer.go).
	LockShared(dir string) (io.Closer, error)
}

// fileHandle is the part of *os.File the store uses.
type fileHandle interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	Sync() error
	Truncate(size int64) error
	Chmod(mode os.FileMode) error
	Stat() (os.FileInfo, error)
	Close() error
}

var errWouldBlock = errors.New("lock held by another open file")

// osFS is the real file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (fileHandle, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// ReadHead uses raw open, pread, fstat and close: an *os.File would add an
// allocation and a failed epoll registration per file, which List pays
// ten thousand times.
func (osFS) ReadHead(name string, head, tail []byte) ([]byte, bool, []byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, false, nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	n, err := preadFull(fd, head, 0)
	if err != nil {
		return nil, false, nil, &os.PathError{Op: "read", Path: name, Err: err}
	}
	if n < len(head) {
		return head[:n], true, nil, nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, false, nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Size <= int64(n) {
		return head, true, nil, nil
	}
	m, err := preadFull(fd, tail, max(st.Size-int64(len(tail)), 0))
	if err != nil {
		return nil, false, nil, &os.PathError{Op: "read", Path: name, Err: err}
	}
	return head, false, tail[:m], nil
}

// preadFull reads into buf from offset off until buf is full or the file
// ends, and returns the bytes read.
func preadFull(fd int, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Pread(fd, buf[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

func (osFS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (osFS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }
func (osFS) RemoveAll(name string) error               { return os.RemoveAll(name) }
func (osFS) Stat(name string) (os.FileInfo, error)     { return os.Stat(name) }

// ReadDir returns the entries in directory order, not sorted: a list of
// 10,000 sessions would spend a fifth of its page sorting them.
func (osFS) ReadDir(name string) ([]os.DirEntry, error) {
	d, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Lock(dir string) (io.Closer, error) {
	// flock on the directory itself: the lock lives as long as this open
	// file description, follows the directory across a rename, and needs
	// no extra file. LOCK_NB turns contention into an immediate answer.
	d, err := flockDir(dir, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, errWouldBlock
	}
	return d, err
}

func (osFS) LockShared(dir string) (io.Closer, error) {
	return flockDir(dir, syscall.LOCK_SH)
}

// flockDir flocks dir with how (internal/flock).
func flockDir(dir string, how int) (io.Closer, error) {
	d, err := flock.Dir(dir, how)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ensureDir creates dir and any missing parents with mode 0700, fsyncing
// each parent so the directory survives a crash. It fsyncs the parent also
// when dir exists already: whoever made it (another process) may not have
// fsynced it yet, and what the caller makes durable inside must not vanish
// with its directory.
func ensureDir(fs fsys, dir string) error {
	parent := filepath.Dir(dir)
	if fi, err := fs.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		// fsync the parent: the entry may still be only in memory.
		return fs.SyncDir(parent)
	}
	if parent != dir {
		if err := ensureDir(fs, parent); err != nil {
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

// pathError is err, a failure of op on path, as the error to return. An
// *os.PathError or *os.LinkError about path already says both; wrapping
// it again would name the path twice ("create X: open X: is a
// directory"), so it is returned as it is.
func pathError(op, path string, err error) error {
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

// writeFileAtomic replaces path with data: write a temporary file in the
// same directory, fsync it, rename it over path, fsync the directory.
// Readers see the old or the new content, never a mix. The temporary name
// is fixed, <name>.tmp: every caller holds a lock that makes it the only
// writer of path (the session's flock for header.json, the root's for the
// registry), and the next write reuses a temporary file a crash left.
// WriteFileAtomic, which has no such lock, uses a unique name.
func writeFileAtomic(fs fsys, path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return pathError("create", tmp, err)
	}
	return publishTemp(fs, f, tmp, path, data)
}

// publishTemp writes data to the new temporary file f (named tmp), makes it
// durable and renames it over path.
func publishTemp(fs fsys, f fileHandle, tmp, path string, data []byte) error {
	if err := writeSyncClose(f, tmp, data); err != nil {
		return err
	}
	// rename is the atomic publication: readers see either file whole.
	if err := fs.Rename(tmp, path); err != nil {
		return pathError("rename", tmp, err)
	}
	// fsync the directory: the rename itself is otherwise only in memory.
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		return &publishedError{pathError("fsync dir", filepath.Dir(path), err)}
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
	return writeFileUnique(osFS{}, path, data, perm)
}

func writeFileUnique(fs fsys, path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := ensureDir(fs, dir); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, tmp, err := createUnique(fs, path+".tmp-")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		fs.RemoveAll(tmp)
		return pathError("chmod", tmp, err)
	}
	err = publishTemp(fs, f, tmp, path, data)
	var pub *publishedError
	if err != nil && !errors.As(err, &pub) {
		// Not renamed: the unique temporary file would stay forever.
		fs.RemoveAll(tmp)
	}
	return err
}

// createUnique creates a new file named prefix plus a random suffix, as
// os.CreateTemp does, through fs.
func createUnique(fs fsys, prefix string) (fileHandle, string, error) {
	for try := 0; ; try++ {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && try < 10000 {
			continue
		}
		return f, name, err
	}
}

// writeSyncClose writes data to the new file f (named name), fsyncs it and
// closes it: its bytes are on disk before anything (a rename, a directory
// fsync) makes them visible. f is closed on every path.
func writeSyncClose(f fileHandle, name string, data []byte) error {
	// Write the whole content.
	if _, err := f.Write(data); err != nil {
		f.Close()
		return pathError("write", name, err)
	}
	// fsync the file before it is published.
	if err := f.Sync(); err != nil {
		f.Close()
		return pathError("fsync", name, err)
	}
	if err := f.Close(); err != nil {
		return pathError("close", name, err)
	}
	return nil
}
