package storetest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/summary"
)

// FaultFS fails chosen operations of the file system it wraps. The hook
// (Arm) sees every operation (op, path); returning a non-nil Fault
// injects it. The ops are "open", "read", "write", "sync", "truncate",
// "rename", "mkdir", "syncdir", "remove", "lock" and "lockshared".
type FaultFS struct {
	fsys.FS
	mu   sync.Mutex
	hook func(op, path string) *Fault
	log  []string
}

// Fault is one injected failure. Partial > 0 makes a write store that
// many bytes before failing (a torn write).
type Fault struct {
	Err     error
	Partial int
}

// ErrInjected is the error of the faults the tests inject.
var ErrInjected = errors.New("injected fault")

// Arm makes hook see every operation from now on; nil disarms.
func (f *FaultFS) Arm(hook func(op, path string) *Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// FailOnce arms a fault on the first operation op on a path ending in
// suffix.
func (f *FaultFS) FailOnce(op, suffix string, flt Fault) {
	done := false
	f.Arm(func(o, p string) *Fault {
		// Any path ("") means any of the session's own files: the summary
		// index is derived, its failures are tested on their own
		// (store/summaries_test.go).
		if suffix == "" && strings.Contains(p, summary.FileName) {
			return nil
		}
		if !done && o == op && strings.HasSuffix(p, suffix) {
			done = true
			return &flt
		}
		return nil
	})
}

// Ops returns the operations seen since the last ResetOps, each as
// "op base-name".
func (f *FaultFS) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// ResetOps forgets the operations seen so far.
func (f *FaultFS) ResetOps() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
}

func (f *FaultFS) check(op, path string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, op+" "+filepath.Base(path))
	if f.hook == nil {
		return nil
	}
	return f.hook(op, path)
}

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if flt := f.check("open", name); flt != nil {
		return nil, flt.Err
	}
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: h, fs: f, path: name}, nil
}

func (f *FaultFS) Rename(o, n string) error {
	if flt := f.check("rename", o); flt != nil {
		return flt.Err
	}
	return f.FS.Rename(o, n)
}

func (f *FaultFS) Mkdir(name string, perm os.FileMode) error {
	if flt := f.check("mkdir", name); flt != nil {
		return flt.Err
	}
	return f.FS.Mkdir(name, perm)
}

func (f *FaultFS) SyncDir(name string) error {
	if flt := f.check("syncdir", name); flt != nil {
		return flt.Err
	}
	return f.FS.SyncDir(name)
}

func (f *FaultFS) ReadFile(name string) ([]byte, error) {
	if flt := f.check("read", name); flt != nil {
		return nil, flt.Err
	}
	return f.FS.ReadFile(name)
}

func (f *FaultFS) ReadHead(name string, head, tail []byte) ([]byte, bool, []byte, error) {
	if flt := f.check("read", name); flt != nil {
		return nil, false, nil, flt.Err
	}
	return f.FS.ReadHead(name, head, tail)
}

func (f *FaultFS) Lock(dir string) (io.Closer, error) {
	if flt := f.check("lock", dir); flt != nil {
		return nil, flt.Err
	}
	return f.FS.Lock(dir)
}

func (f *FaultFS) LockShared(dir string) (io.Closer, error) {
	if flt := f.check("lockshared", dir); flt != nil {
		return nil, flt.Err
	}
	return f.FS.LockShared(dir)
}

func (f *FaultFS) RemoveAll(name string) error {
	if flt := f.check("remove", name); flt != nil {
		return flt.Err
	}
	return f.FS.RemoveAll(name)
}

type faultFile struct {
	fsys.File
	fs   *FaultFS
	path string
}

func (f *faultFile) write(p []byte, off int64, at bool) (int, error) {
	if flt := f.fs.check("write", f.path); flt != nil {
		n := min(flt.Partial, len(p))
		if n > 0 {
			if at {
				f.File.WriteAt(p[:n], off)
			} else {
				f.File.Write(p[:n])
			}
		}
		return n, flt.Err
	}
	if at {
		return f.File.WriteAt(p, off)
	}
	return f.File.Write(p)
}

func (f *faultFile) Write(p []byte) (int, error)              { return f.write(p, 0, false) }
func (f *faultFile) WriteAt(p []byte, off int64) (int, error) { return f.write(p, off, true) }

func (f *faultFile) Sync() error {
	if flt := f.fs.check("sync", f.path); flt != nil {
		return flt.Err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if flt := f.fs.check("truncate", f.path); flt != nil {
		return flt.Err
	}
	return f.File.Truncate(size)
}
