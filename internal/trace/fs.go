package trace

import (
	"io"
	"os"
)

// FS is the file system a Writer writes to; tests inject failures.
type FS interface {
	Mkdir(path string, perm os.FileMode) error
	MkdirAll(path string, perm os.FileMode) error
	OpenFile(name string, flag int, perm os.FileMode) (io.WriteCloser, error)
	ReadDir(name string) ([]os.DirEntry, error)
	Remove(name string) error
}

type osFS struct{}

func (osFS) Mkdir(path string, perm os.FileMode) error    { return os.Mkdir(path, perm) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) OpenFile(name string, flag int, perm os.FileMode) (io.WriteCloser, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
