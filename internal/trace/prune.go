package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/loopdev/loop/internal/flock"
)

// A writer holds a shared flock on its trace directory from its first
// write until Close; the retention sweep removes a directory only under an
// exclusive one, taken without waiting. So the sweep never removes the
// trace of a session some process has open, however old its files: it
// would otherwise unlink the segment the writer keeps open between bursts,
// and every later record would vanish without an incomplete mark
// (docs/traces.md, "Bounds and retention").

// prunedPrefix names a directory the sweep took out of place and is
// removing; one a crash left is removed by the next sweep.
const prunedPrefix = ".pruned-"

// lockDir flocks dir, shared or exclusive; exclusive does not wait.
func lockDir(dir string, exclusive bool) (*os.File, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX | syscall.LOCK_NB
	}
	return flock.Dir(dir, how)
}

// holdDir takes the writer's shared lock on dir, creating it with mkdir
// first. A sweep may have moved the directory away between the two: the
// lock is then on the moved one, so it checks that the path still names
// the locked directory and starts again if not.
func holdDir(dir string, mkdir func() error) (io.Closer, error) {
	for attempt := 0; ; attempt++ {
		if err := mkdir(); err != nil {
			return nil, err
		}
		d, err := lockDir(dir, false)
		if errors.Is(err, os.ErrNotExist) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		held, err1 := d.Stat()
		now, err2 := os.Stat(dir)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return d, nil
		}
		d.Close()
		if attempt >= 3 {
			return nil, fmt.Errorf("lock %s: the directory keeps moving", dir)
		}
	}
}

// Prune removes the session traces under root (<root>/<scope>/<sessionId>/)
// whose newest file is older than cutoff, except those a writer holds.
// logf reports a directory it could not remove.
func Prune(root string, cutoff time.Time, logf func(dir string, err error)) {
	scopes, _ := os.ReadDir(root)
	for _, sc := range scopes {
		sd := filepath.Join(root, sc.Name())
		dirs, _ := os.ReadDir(sd)
		for _, d := range dirs {
			dir := filepath.Join(sd, d.Name())
			if strings.HasPrefix(d.Name(), prunedPrefix) {
				if err := os.RemoveAll(dir); err != nil {
					logf(dir, err)
				}
				continue
			}
			if err := pruneOne(sd, dir, cutoff); err != nil {
				logf(dir, err)
			}
		}
	}
}

// pruneOne removes one trace directory if it is old and nobody writes it:
// under the exclusive lock it checks the age and moves the directory out
// of place (a writer that was waiting for the lock then sees it gone and
// makes a new one); it removes it after letting the lock go.
func pruneOne(scopeDir, dir string, cutoff time.Time) error {
	lock, err := lockDir(dir, true)
	if err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, os.ErrNotExist) {
			return nil // being written, or gone
		}
		return err
	}
	if !newest(dir).Before(cutoff) {
		lock.Close()
		return nil
	}
	hidden := filepath.Join(scopeDir, prunedPrefix+filepath.Base(dir)+fmt.Sprintf("-%d", time.Now().UnixNano()))
	err = os.Rename(dir, hidden)
	lock.Close()
	if err != nil {
		return err
	}
	return os.RemoveAll(hidden)
}

func newest(dir string) time.Time {
	var t time.Time
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		if info, err := f.Info(); err == nil && info.ModTime().After(t) {
			t = info.ModTime()
		}
	}
	return t
}
