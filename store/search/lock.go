package search

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/loopdev/loop/store/internal/fsys"
)

// lockWait takes the flock of dir, retrying while another holder has it,
// for at most wait.
func lockWait(fs fsys.FS, dir string, wait time.Duration) (io.Closer, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := fs.Lock(dir)
		if !errors.Is(err, fsys.ErrWouldBlock) {
			return l, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		// Another process holds it: wait a moment before trying again.
		time.Sleep(time.Millisecond)
	}
}
