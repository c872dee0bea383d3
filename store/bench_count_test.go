package store

import (
	"os"
	"sync/atomic"

	"github.com/loopdev/loop/store/internal/fsys"
)

// countingFS counts the bytes written through it (logs and header files
// alike), for benchmarks that report what a write costs on disk.
type countingFS struct {
	fsys.FS
	written atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, n: &c.written}, nil
}

type countingFile struct {
	fsys.File
	n *atomic.Int64
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.n.Add(int64(n))
	return n, err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.n.Add(int64(n))
	return n, err
}
