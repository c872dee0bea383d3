package fsys

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/loopdev/loop/internal/flock"
)

// OS is the real file system.
type OS struct{}

func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (OS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// ReadHead uses raw open, pread, fstat and close: an *os.File would add an
// allocation and a failed epoll registration per file, which List pays
// ten thousand times.
func (OS) ReadHead(name string, head, tail []byte) ([]byte, bool, []byte, error) {
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

func (OS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (OS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }
func (OS) RemoveAll(name string) error               { return os.RemoveAll(name) }
func (OS) Stat(name string) (os.FileInfo, error)     { return os.Stat(name) }

// ReadDir returns the entries in directory order, not sorted: a list of
// 10,000 sessions would spend a fifth of its page sorting them.
func (OS) ReadDir(name string) ([]os.DirEntry, error) {
	d, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func (OS) SyncDir(name string) error {
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

func (OS) Lock(dir string) (io.Closer, error) {
	// flock on the directory itself: the lock lives as long as this open
	// file description, follows the directory across a rename, and needs
	// no extra file. LOCK_NB turns contention into an immediate answer.
	d, err := flockDir(dir, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, ErrWouldBlock
	}
	return d, err
}

func (OS) LockShared(dir string) (io.Closer, error) {
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
