package store

import (
	"os"
	"sync/atomic"
)

// countingFS counts the bytes written through it (logs and header files
// alike), for benchmarks that report what a write costs on disk.
type countingFS struct {
	fsys
	written atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (fileHandle, error) {
	f, err := c.fsys.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{fileHandle: f, n: &c.written}, nil
}

type countingFile struct {
	fileHandle
	n *atomic.Int64
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.fileHandle.Write(p)
	f.n.Add(int64(n))
	return n, err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.fileHandle.WriteAt(p, off)
	f.n.Add(int64(n))
	return n, err
}
