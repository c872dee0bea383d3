package store

// MostRecent returns the id of the scope's most recently active
// unarchived session, empty ones included (what ContinueRecent opens);
// found is false when the scope has none. A malformed header in the scope
// is an error, not skipped: skipping it could continue an older session
// than the one the user means.
func (r *Root) MostRecent(workspaceID string) (id string, found bool, err error) {
	heads, err := r.scan(workspaceID)
	if err != nil {
		return "", false, err
	}
	var best *Header
	for i := range heads {
		h := &heads[i]
		if h.ArchivedAt == nil && (best == nil || newer(h, best)) {
			best = h
		}
	}
	if best == nil {
		return "", false, nil
	}
	return best.ID, true, nil
}
