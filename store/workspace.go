package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Workspace is a registered project directory.
type Workspace struct {
	ID   string
	Name string
	Cwd  string // canonical: absolute, symlinks resolved
}

const (
	registryFormat  = "loop-workspaces"
	registryVersion = 1
)

// registry is workspaces.json, a disk record like those of records.go.
// Removed workspaces stay listed with removedAt so that adding the same
// directory again brings back the same id, and with it the sessions kept
// on disk.
type registry struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Workspaces []registryEntry `json:"workspaces"`
}

type registryEntry struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Cwd       string `json:"cwd"`
	RemovedAt int64  `json:"removedAt,omitempty"` // Unix ms
}

func (e *registryEntry) workspace() Workspace { return Workspace{ID: e.ID, Name: e.Name, Cwd: e.Cwd} }

func (r *Root) registryPath() string { return r.Layout().Registry() }

func (r *Root) readRegistry() (registry, error) {
	path := r.registryPath()
	data, err := r.fs.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return registry{Format: registryFormat, Version: registryVersion}, nil
	}
	if err != nil {
		return registry{}, fmt.Errorf("read workspace registry: %w", err)
	}
	var reg registry
	if err := json.Unmarshal(data, &reg); err != nil {
		return registry{}, malformed(path, "%v", err)
	}
	if reg.Format != registryFormat || reg.Version != registryVersion {
		return registry{}, fmt.Errorf("%w: %s: format %q version %d", ErrUnsupportedFormat, path, reg.Format, reg.Version)
	}
	for _, w := range reg.Workspaces {
		if !validID(w.ID) || !filepath.IsAbs(w.Cwd) {
			return registry{}, malformed(path, "workspace %q with cwd %q", w.ID, w.Cwd)
		}
	}
	return reg, nil
}

// errRegistryUnchanged is what a change of updateRegistry returns to leave
// the file as it is, unwritten.
var errRegistryUnchanged = errors.New("registry unchanged")

// updateRegistry runs a read-modify-write of the registry under an
// exclusive flock on the root directory, so two processes adding
// workspaces at once do not lose one.
func (r *Root) updateRegistry(change func(*registry) error) error {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	if err := fsys.EnsureDir(r.fs, r.dir); err != nil {
		return fmt.Errorf("create data root: %w", err)
	}
	var lock io.Closer
	for {
		l, err := r.fs.Lock(r.dir)
		if err == nil {
			lock = l
			break
		}
		if !errors.Is(err, fsys.ErrWouldBlock) {
			return fmt.Errorf("lock workspace registry: %w", err)
		}
		// Registry writes take microseconds; another process holds it now.
		sleepBriefly()
	}
	defer lock.Close()
	reg, err := r.readRegistry()
	if err != nil {
		return err
	}
	if err := change(&reg); errors.Is(err, errRegistryUnchanged) {
		return nil
	} else if err != nil {
		return err
	}
	data, err := jsonenc.MarshalIndent(&reg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode workspace registry: %w", err)
	}
	if err := writeFileAtomic(r.fs, r.registryPath(), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write workspace registry: %w", err)
	}
	return nil
}

// canonicalDir returns the absolute, symlink-free form of an existing
// directory.
func canonicalDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: empty directory", ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrInvalid, dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrInvalid, dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrInvalid, dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %q is not a directory", ErrInvalid, dir)
	}
	return real, nil
}

// AddWorkspace registers cwd, which must be an existing directory. The same
// canonical directory maps to one workspace: adding it again returns the
// existing entry (renamed when name is not empty), and a removed one comes
// back with its id. The default name is the directory's base name.
func (r *Root) AddWorkspace(cwd, name string) (Workspace, error) {
	canon, err := canonicalDir(cwd)
	if err != nil {
		return Workspace{}, err
	}
	var out Workspace
	err = r.updateRegistry(func(reg *registry) error {
		for i := range reg.Workspaces {
			w := &reg.Workspaces[i]
			if w.Cwd != canon {
				continue
			}
			unchanged := w.RemovedAt == 0 && (name == "" || name == w.Name)
			if name != "" {
				w.Name = name
			}
			w.RemovedAt = 0
			out = w.workspace()
			if unchanged {
				// Registered as asked already (loop run and every
				// imported file add it again): nothing to write.
				return errRegistryUnchanged
			}
			return nil
		}
		if name == "" {
			name = filepath.Base(canon)
		}
		out = Workspace{ID: r.newID(), Name: name, Cwd: canon}
		reg.Workspaces = append(reg.Workspaces, registryEntry{ID: out.ID, Name: out.Name, Cwd: out.Cwd})
		return nil
	})
	return out, err
}

// reserveWorkspace returns the id of the workspace of canon, a canonical
// directory, for a session about to be imported there (Root.ImportInto),
// without listing the workspace: the id of its entry, removed or not,
// else that of a new entry added as removed, which AddWorkspace then
// brings back. Every process that imports into or adds the directory
// meanwhile finds that entry, so they all agree on the id; an import that
// fails after this point leaves the entry removed, where it is never
// listed (removing it could strand the session another import is writing
// into the same scope right now).
func (r *Root) reserveWorkspace(canon string) (string, error) {
	var id string
	err := r.updateRegistry(func(reg *registry) error {
		for _, w := range reg.Workspaces {
			if w.Cwd == canon {
				id = w.ID
				return errRegistryUnchanged
			}
		}
		id = r.newID()
		reg.Workspaces = append(reg.Workspaces, registryEntry{ID: id, Name: filepath.Base(canon), Cwd: canon, RemovedAt: r.nowMs()})
		return nil
	})
	return id, err
}

// Workspaces returns the registered workspaces in the order they were added.
func (r *Root) Workspaces() ([]Workspace, error) {
	reg, err := r.readRegistry()
	if err != nil {
		return nil, err
	}
	out := []Workspace{}
	for _, w := range reg.Workspaces {
		if w.RemovedAt == 0 {
			out = append(out, w.workspace())
		}
	}
	return out, nil
}

// Workspace returns one registered workspace, or ErrWorkspaceNotFound.
func (r *Root) Workspace(id string) (Workspace, error) {
	reg, err := r.readRegistry()
	if err != nil {
		return Workspace{}, err
	}
	for _, w := range reg.Workspaces {
		if w.ID == id && w.RemovedAt == 0 {
			return w.workspace(), nil
		}
	}
	return Workspace{}, fmt.Errorf("%w: %q", ErrWorkspaceNotFound, id)
}

// RemoveWorkspace unregisters a workspace. Its session files stay on disk.
func (r *Root) RemoveWorkspace(id string) error {
	return r.updateRegistry(func(reg *registry) error {
		for i := range reg.Workspaces {
			w := &reg.Workspaces[i]
			if w.ID == id && w.RemovedAt == 0 {
				w.RemovedAt = r.nowMs()
				return nil
			}
		}
		return fmt.Errorf("%w: %q", ErrWorkspaceNotFound, id)
	})
}

// NewPrivateCwd creates a private working directory (0700) for an
// independent session: <root>-workspaces/<uuid>/, a sibling of the root so
// generated files stay outside Loop's storage.
func (r *Root) NewPrivateCwd() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("new private cwd id: %w", err)
	}
	dir := r.Layout().PrivateCwd(id.String())
	if err := fsys.EnsureDir(r.fs, dir); err != nil {
		return "", fmt.Errorf("create private cwd: %w", err)
	}
	return dir, nil
}
