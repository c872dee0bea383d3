//go:build !linux

package gitsnap

import "context"

// No watcher here: every snapshot runs git (watch.go).
type watcher struct{ watchState }

func (s *Store) newWatcher(context.Context) (*watcher, error) {
	return nil, &offError{"no file-system watcher on this system"}
}

func (w *watcher) close() {}
func (w *watcher) drain() {}
func (w *watcher) begin() {}
