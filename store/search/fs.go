package search

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/loopdev/loop/internal/flock"
)

// fsys is the seam between the index and the operating system, so that
// tests can fail any step of an append, a rebuild or a read and check that
// a commit, and the answers of a search, never depend on it.
type fsys interface {
	OpenFile(name string, flag int, perm os.FileMode) (fileHandle, error)
	Rename(oldpath, newpath string) error
	Mkdir(name string, perm os.FileMode) error
	RemoveAll(name string) error
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory, so that an entry made in it survives a
	// crash.
	SyncDir(name string) error
	// Lock takes an exclusive flock on a directory without waiting; it
	// returns errWouldBlock when another open file description holds it.
	// Closing the returned handle releases it.
	Lock(dir string) (io.Closer, error)
}

// fileHandle is the part of *os.File the index uses.
type fileHandle interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
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

func (osFS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (osFS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }
func (osFS) RemoveAll(name string) error               { return os.RemoveAll(name) }
func (osFS) Stat(name string) (os.FileInfo, error)     { return os.Stat(name) }

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
	d, err := flock.Dir(dir, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, errWouldBlock
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// lockWait takes the flock of dir, retrying while another holder has it,
// for at most wait.
func lockWait(fs fsys, dir string, wait time.Duration) (io.Closer, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := fs.Lock(dir)
		if !errors.Is(err, errWouldBlock) {
			return l, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		// Another process holds it: wait a moment before trying again.
		time.Sleep(time.Millisecond)
	}
}

// ensureDir creates dir and any missing parents with mode 0700, fsyncing
// each parent, as the store makes its own directories (store/fs.go).
func ensureDir(fs fsys, dir string) error {
	parent := filepath.Dir(dir)
	if fi, err := fs.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
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
	return fs.SyncDir(parent)
}

// createUnique creates a new file named prefix plus a random suffix, as
// os.CreateTemp does, through fs; the store's sweep removes the ones a
// crash leaves (docs/storage.md).
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcUpdate is the CRC-32C of the index's lines (docs/storage.md), the
// checksum the store's logs use.
func crcUpdate(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }
