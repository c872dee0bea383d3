package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IDsWithPrefix returns the ids of the stored sessions, in every scope,
// that start with prefix, sorted: a session directory with a header.json
// of any format counts, so that an id typed short never opens a session
// other than the one a full id would name. The command line takes any
// unique prefix of a session id (docs/cli.md); Find, Open and the
// protocol take only whole ids. It reads directories and no header.
func (r *Root) IDsWithPrefix(prefix string) ([]string, error) {
	if prefix == "" {
		return nil, fmt.Errorf("%w: an empty session id prefix", ErrInvalid)
	}
	scopes, err := r.fs.ReadDir(r.sessionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find sessions %s…: %w", prefix, err)
	}
	var ids []string
	for _, sc := range scopes {
		if !sc.IsDir() || (sc.Name() != globalScope && !validID(sc.Name())) {
			continue
		}
		dir := filepath.Join(r.sessionsDir(), sc.Name())
		entries, err := r.fs.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("find sessions %s…: %w", prefix, err)
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || !validID(e.Name()) {
				continue
			}
			if _, err := r.fs.Stat(filepath.Join(dir, e.Name(), headerFile)); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
