// Package flock takes advisory locks on directories: the store's session
// and index locks and a trace's writer lock are flocks on a directory
// (docs/storage.md, docs/traces.md).
package flock

import (
	"fmt"
	"os"
	"syscall"
)

// Dir opens dir and flocks it with how (syscall.LOCK_SH or LOCK_EX, with
// LOCK_NB not to wait), retrying on EINTR. Closing the file lets go. The
// error wraps the flock errno, so a caller can tell contention
// (syscall.EWOULDBLOCK).
func Dir(dir string, how int) (*os.File, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(d.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("flock %s: %w", dir, err)
	}
	return d, nil
}
