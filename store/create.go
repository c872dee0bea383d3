package store

// CreateWith is Create with the new header's metadata (model, effort,
// permission, title) set by edit before the first write, so an empty
// persistent session is written once, whole, with its settings
// (docs/storage.md "Creating a session"). edit may not change the fields
// the store owns.
func (r *Root) CreateWith(workspaceID, cwd string, edit func(*Header)) (*Session, error) {
	if err := checkCwd(cwd); err != nil {
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
