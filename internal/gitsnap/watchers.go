package gitsnap

import (
	"slices"
	"sync"
)

// Watchers bounds how many stores keep a watcher at once, for a process
// with many sessions: each watcher holds an inotify instance and a share
// of the user's inotify watches (fs.inotify.max_user_instances, 128 by
// default, and max_user_watches are per user: the user's editor needs
// its own). Past the bound, the store whose last snapshot is the oldest
// lets its watcher go; its next snapshot runs git and starts one again.
type Watchers struct {
	max int
	// mu guards live: a leaf, never held across I/O or while a store's
	// lock is taken.
	mu   sync.Mutex
	live []*Store // stores that may hold a watcher, the least recently used first
}

// NewWatchers bounds the live watchers of the stores that name it to n
// (at least 1).
func NewWatchers(n int) *Watchers { return &Watchers{max: max(1, n)} }

// used marks s as the latest store to snapshot with a watcher, and
// returns the store that must let its watcher go, if any.
func (ws *Watchers) used(s *Store) (victim *Store) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.live = slices.DeleteFunc(ws.live, func(o *Store) bool { return o == s })
	ws.live = append(ws.live, s)
	if len(ws.live) > ws.max {
		victim, ws.live = ws.live[0], ws.live[1:]
	}
	return victim
}

// forget drops s (closed).
func (ws *Watchers) forget(s *Store) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.live = slices.DeleteFunc(ws.live, func(o *Store) bool { return o == s })
}
