package storetest

import (
	"os"
	"sync"
	"testing"
)

// TempDirs are directories that outlive one benchmark run: fixtures built
// once per process and shared by its runs, which TestMain removes with
// RemoveAll once every run is done (testing.B's TempDir would go with
// the first run).
type TempDirs struct {
	mu   sync.Mutex
	dirs []string
}

// New makes a directory named prefix plus a random suffix.
func (d *TempDirs) New(tb testing.TB, prefix string) string {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dirs = append(d.dirs, dir)
	return dir
}

// RemoveAll removes every directory New made.
func (d *TempDirs) RemoveAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dir := range d.dirs {
		os.RemoveAll(dir)
	}
	d.dirs = nil
}
