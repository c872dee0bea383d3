package store

import (
	"errors"
	"os"
	"slices"

	"github.com/loopdev/loop/store/internal/summary"
)

// MostRecent returns the id of the scope's most recently active
// unarchived session, empty ones included (what ContinueRecent opens);
// found is false when the scope has none. A malformed header in the scope
// is an error, not skipped: skipping it could continue an older session
// than the one the user means.
//
// It answers from the summary index (docs/storage.md, "Summary index")
// when the index can vouch for the answer, reading the headers of the
// sessions whose claims rank highest and of every name the index does not
// place (unknown, malformed, not a session); otherwise, and whenever a
// header contradicts its claim, it reads every header, as List does, and
// rebuilds the index. Either way the answer is the one a read of every
// header gives, as long as no header was changed in place behind the
// index (its invariant; a page relies on it alike).
func (r *Root) MostRecent(workspaceID string) (id string, found bool, err error) {
	sd, err := r.scopeDir(workspaceID)
	if err != nil {
		return "", false, err
	}
	id, found, v, err := r.mostRecentIndexed(sd)
	if v == answered || err != nil {
		return id, found, err
	}
	return r.mostRecentByScan(workspaceID, sd, v == rebuild)
}

// What the summary index can say of MostRecent.
type indexVerdict int

const (
	answered indexVerdict = iota
	// scanAll: a header the index names needs the whole scan (it is
	// malformed), but the index is sound.
	scanAll
	// rebuild: the index cannot be trusted (missing, damaged, stale, too
	// many unknown names, contradicted by a header).
	rebuild
)

// mostRecentByScan is MostRecent by reading every header; with rebuild it
// also rewrites the index from what it read.
func (r *Root) mostRecentByScan(workspaceID, sd string, rebuild bool) (string, bool, error) {
	heads, err := r.scanRebuilding(workspaceID, sd, rebuild)
	if err != nil {
		return "", false, err
	}
	id, found := mostRecentOf(heads)
	return id, found, nil
}

// mostRecentOf is the newest unarchived of heads (newer's order).
func mostRecentOf(heads []Header) (id string, found bool) {
	var best *Header
	for i := range heads {
		h := &heads[i]
		if h.ArchivedAt == nil && (best == nil || newer(h, best)) {
			best = h
		}
	}
	if best == nil {
		return "", false
	}
	return best.ID, true
}

// mostRecentIndexed is MostRecent through the summary index, when its
// verdict is answered; otherwise the index cannot vouch for the answer and
// every header must be read.
func (r *Root) mostRecentIndexed(sd string) (id string, found bool, v indexVerdict, err error) {
	names, err := r.sessionNames(sd)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, answered, nil
	}
	if err != nil {
		return "", false, rebuild, err
	}
	claims, _, ok := r.summaryIndex().Claims(sd, names)
	if !ok {
		return "", false, rebuild, nil
	}
	type cand struct {
		name string
		c    summary.Claim
	}
	var direct, unknown []string
	cands := make([]cand, 0, len(names))
	for i, name := range names {
		c := claims[i]
		switch {
		case !validID(name):
			direct = append(direct, name)
		case c.State == 0, c.State == summary.Deleted:
			unknown = append(unknown, name)
		case c.State == summary.Malformed, c.State == summary.Other:
			// Read every time: a malformed header is an error, and a
			// directory that had none may have one now.
			direct = append(direct, name)
		case c.State == summary.Exact && c.Flags&summary.InArchived != 0:
			// Exactly archived. A loose claim's flags cover the lists
			// the session may be in, and an empty unarchived session is
			// in none: it stays a candidate.
		default:
			cands = append(cands, cand{name, c})
		}
	}
	if len(unknown) > summary.MaxUnknown {
		return "", false, rebuild, nil
	}
	head, tail := make([]byte, listHeadSize), make([]byte, 64)
	var best Header
	haveBest := false
	// read reads one header; it answers scanAll when the header is
	// malformed (the scan names every such header of the scope, and errs)
	// and rebuild when it contradicts the exact claim c.
	read := func(name string, c *summary.Claim) (indexVerdict, error) {
		h, ok, malformed, err := r.entryHeader(sd, name, head, tail)
		switch {
		case err != nil:
			return rebuild, err
		case !ok:
			return answered, nil
		case malformed != nil:
			return scanAll, nil
		}
		if c != nil && c.State == summary.Exact && summaryClaim(&h) != *c {
			return rebuild, nil
		}
		if h.ArchivedAt == nil && (!haveBest || newer(&h, &best)) {
			best, haveBest = h, true
		}
		return answered, nil
	}
	for _, name := range append(direct, unknown...) {
		if v, err := read(name, nil); v != answered || err != nil {
			return "", false, v, err
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if newerThan(a.c.UpdatedAt, a.name, b.c.UpdatedAt, b.name) {
			return -1
		}
		return 1
	})
	for _, c := range cands {
		// Every claim is an upper bound: once the best verified session
		// ranks above the next claim, nothing left can beat it.
		if haveBest && newerThan(best.UpdatedAt, best.ID, c.c.UpdatedAt, c.name) {
			break
		}
		if v, err := read(c.name, &c.c); v != answered || err != nil {
			return "", false, v, err
		}
	}
	if len(unknown) > 0 {
		r.adoptUnknown(sd, unknown)
	}
	if !haveBest {
		return "", false, answered, nil
	}
	return best.ID, true, answered, nil
}
