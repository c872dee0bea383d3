package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/summary"
)

// ResolveDataRoot returns the data root: flag if not empty, else $LOOP_HOME,
// else $XDG_DATA_HOME/loop (when absolute, as the XDG spec requires), else
// ~/.local/share/loop. The result is absolute and cleaned.
func ResolveDataRoot(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("LOOP_HOME")
	}
	if dir == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Join(x, "loop")
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("resolve data root: %w", err)
		}
		dir = filepath.Join(home, ".local", "share", "loop")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve data root %q: %w", dir, err)
	}
	return abs, nil
}

// Root is a data root: the workspace registry and the session directories.
// It is safe for concurrent use.
type Root struct {
	dir   string
	fs    fsys.FS
	now   func() time.Time
	newID func() string // ids of new sessions and workspaces
	regMu sync.Mutex    // serializes registry updates within the process

	// marks: what this Root knows of its scopes' summary indexes beyond
	// the files (store/internal/summary/marks.go).
	marks *summary.Marks

	// observers are told of every write of the sessions the Root opens
	// (store/observer.go); obsMu guards the slice, which is replaced, never
	// changed in place.
	obsMu     sync.Mutex
	observers []Observer
}

// OpenRoot returns the data root at dir. It does no I/O: directories are
// created (0700) on the first write, so server start-up never waits on it.
func OpenRoot(dir string) (*Root, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty data root", ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data root %q: %w", dir, err)
	}
	r := &Root{dir: abs, fs: fsys.OS{}, now: time.Now, newID: newID, marks: summary.NewMarks()}
	// The summary index is every writer's to keep (its invariant,
	// store/summaries.go), so every Root has it.
	r.observers = []Observer{summaryObserver{r}}
	return r, nil
}

// Dir returns the root's absolute path.
func (r *Root) Dir() string { return r.dir }

// Layout names the paths under the root.
func (r *Root) Layout() Layout { return NewLayout(r.dir) }

func (r *Root) sessionsDir() string { return r.Layout().Sessions() }

// scopeDir returns the directory of a scope ("" is the independent
// collection) after checking the id is safe as a path element.
func (r *Root) scopeDir(workspaceID string) (string, error) {
	if workspaceID != "" && !validID(workspaceID) {
		// No such workspace can exist; callers matching either error agree.
		return "", fmt.Errorf("%w: %w: workspace id %q", ErrWorkspaceNotFound, ErrInvalid, workspaceID)
	}
	return r.Layout().Scope(workspaceID), nil
}

func (r *Root) sessionDir(workspaceID, id string) (string, error) {
	if _, err := r.scopeDir(workspaceID); err != nil {
		return "", err
	}
	if !validID(id) {
		return "", fmt.Errorf("%w: %w: session id %q", ErrSessionNotFound, ErrInvalid, id)
	}
	return r.Layout().Session(workspaceID, id), nil
}

func (r *Root) nowMs() int64 { return r.now().UnixMilli() }

func wsPtr(workspaceID string) *string {
	if workspaceID == "" {
		return nil
	}
	return &workspaceID
}

// sleepBriefly waits before retrying a lock another process holds.
func sleepBriefly() { time.Sleep(time.Millisecond) }
