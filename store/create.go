package store

import (
	"fmt"
	"os"
)

// CreateWith is Create with the new header's metadata (model, effort,
// permission, title) set by edit before the first write, so an empty
// persistent session is written once, whole, with its settings
// (docs/storage.md "Creating a session"). edit may not change the fields
// the store owns.
func (r *Root) CreateWith(workspaceID, cwd string, edit func(*Header)) (*Session, error) {
	if err := r.checkSessionCwd(workspaceID, cwd); err != nil {
		return nil, err
	}
	s := r.Draft(workspaceID, cwd)
	if s.invalid != nil {
		return nil, s.invalid
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	next := s.hdr.clone()
	if err := applyEdit(&next, edit); err != nil {
		return nil, err
	}
	if err := s.createOnDisk(nil, nil, nil, next); err != nil {
		return nil, err
	}
	return s, nil
}

// checkSessionCwd checks the working directory of a new session: an
// existing absolute directory and, for a session of a workspace, the
// workspace's own directory (by identity: another spelling of it is the
// same directory), so that a session never works outside the workspace it
// is listed in. The workspace must be registered.
func (r *Root) checkSessionCwd(workspaceID, cwd string) error {
	if err := checkCwd(cwd); err != nil {
		return err
	}
	if _, err := r.scopeDir(workspaceID); err != nil || workspaceID == "" {
		return err
	}
	ws, err := r.Workspace(workspaceID)
	if err != nil {
		return err
	}
	a, err1 := os.Stat(cwd)
	b, err2 := os.Stat(ws.Cwd)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		return fmt.Errorf("%w: cwd %s is not the directory of workspace %s (%s)", ErrInvalid, cwd, workspaceID, ws.Cwd)
	}
	return nil
}
