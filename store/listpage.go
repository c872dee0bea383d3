package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/loopdev/loop/store/internal/summary"
)

// A page of a list through the summary index (docs/storage.md, "Summary
// index", Reading a page); store/internal/summary has the index itself.

// PageOptions selects one page of a list.
type PageOptions struct {
	// Archived selects the archived list, as in ListOptions.
	Archived bool
	// After, if not nil, is the position the page starts after: only
	// sessions older (smaller updatedAt, or equal updatedAt and smaller id)
	// are returned.
	After *Position
	// Limit is the most summaries returned; 0 returns all of them.
	Limit int
}

// Position is a place in List order.
type Position struct {
	UpdatedAt int64
	ID        string
}

// older reports whether (u, id) comes after p in List order.
func (p *Position) older(u int64, id string) bool {
	return p == nil || u < p.UpdatedAt || (u == p.UpdatedAt && id < p.ID)
}

func newerThan(au int64, aid string, bu int64, bid string) bool {
	return au > bu || (au == bu && aid > bid)
}

// ListPage returns one page of List(workspaceID, {Archived}): the first
// Limit summaries after opt.After, in List order, with List's verdicts on
// malformed headers among those it reads (a *ListError next to the
// summaries). It reads the scope's directory and summary index and, in
// the common case, about Limit headers; when the index is missing,
// damaged, stale or contradicted by a header, it reads every header, as
// List does, and rebuilds the index.
func (r *Root) ListPage(workspaceID string, opt PageOptions) ([]Summary, error) {
	sd, err := r.scopeDir(workspaceID)
	if err != nil {
		return nil, err
	}
	if opt.Limit <= 0 {
		return r.pageByScan(workspaceID, sd, opt, false)
	}
	names, err := r.sessionNames(sd)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// An index that cannot be read is rebuilt, like one that is missing.
	claims, records, ok := r.summaryIndex().Claims(sd, names)
	if !ok {
		return r.pageByScan(workspaceID, sd, opt, true)
	}
	want := byte(summary.InUnarchived)
	if opt.Archived {
		want = summary.InArchived
	}
	type cand struct {
		name string
		c    summary.Claim
	}
	var unknown, malformedNames []string
	cands := make([]cand, 0, 256)
	for i, name := range names {
		c := claims[i]
		switch {
		case !validID(name):
			// Never a session Loop made, and no record can name it: read
			// it every time, as List does.
			malformedNames = append(malformedNames, name)
		case c.State == 0, c.State == summary.Deleted:
			unknown = append(unknown, name)
		case c.State == summary.Malformed:
			// Read every time: a malformed header is reported, as List does.
			malformedNames = append(malformedNames, name)
		case c.State == summary.Other, c.Flags&want == 0:
		case c.State == summary.Exact && !opt.After.older(c.UpdatedAt, name):
			// Exactly placed before the cursor.
		default:
			cands = append(cands, cand{name, c})
		}
	}
	if len(unknown) > summary.MaxUnknown {
		return r.pageByScan(workspaceID, sd, opt, true)
	}
	// A heap, not a sort: the loop below takes about limit candidates of
	// thousands.
	above := func(i, j int) bool {
		return newerThan(cands[i].c.UpdatedAt, cands[i].name, cands[j].c.UpdatedAt, cands[j].name)
	}
	down := func(i, n int) {
		for {
			l := 2*i + 1
			if l >= n {
				return
			}
			if r := l + 1; r < n && above(r, l) {
				l = r
			}
			if !above(l, i) {
				return
			}
			cands[i], cands[l] = cands[l], cands[i]
			i = l
		}
	}
	for i := len(cands)/2 - 1; i >= 0; i-- {
		down(i, len(cands))
	}
	// next pops the candidate with the highest claim.
	n := len(cands)
	next := func() (cand, bool) {
		if n == 0 {
			return cand{}, false
		}
		top := cands[0]
		n--
		cands[0] = cands[n]
		down(0, n)
		return top, true
	}

	head, tail := make([]byte, listHeadSize), make([]byte, 64)
	var lerr *ListError
	var page []Header // verified, in List order
	contradicted := false
	// read verifies one session against its header and keeps it if it
	// belongs on the page.
	read := func(name string, c *summary.Claim) error {
		h, ok, malformed, err := r.entryHeader(sd, name, head, tail)
		if err != nil || !ok {
			return err
		}
		if malformed != nil {
			if lerr == nil {
				lerr = &ListError{}
			}
			lerr.Problems = append(lerr.Problems, malformed)
			return nil
		}
		if c != nil && c.State == summary.Exact && summaryClaim(&h) != *c {
			contradicted = true
		}
		if opt.Archived != (h.ArchivedAt != nil) || (!opt.Archived && h.UserMessageCount == 0 && h.PendingRun == "") ||
			!opt.After.older(h.UpdatedAt, h.ID) {
			return nil
		}
		i, _ := slices.BinarySearchFunc(page, &h, func(a Header, b *Header) int {
			if newerThan(a.UpdatedAt, a.ID, b.UpdatedAt, b.ID) {
				return -1
			}
			return 1
		})
		page = slices.Insert(page, i, h)
		if len(page) > opt.Limit {
			page = page[:opt.Limit]
		}
		return nil
	}
	for _, name := range append(unknown, malformedNames...) {
		if err := read(name, nil); err != nil {
			return nil, err
		}
	}
	for {
		c, ok := next()
		if !ok {
			break
		}
		// Every claim is an upper bound: once the page is full and its
		// last entry ranks above the next claim, nothing left can enter.
		if len(page) == opt.Limit {
			last := &page[len(page)-1]
			if newerThan(last.UpdatedAt, last.ID, c.c.UpdatedAt, c.name) {
				break
			}
		}
		if err := read(c.name, &c.c); err != nil {
			return nil, err
		}
		if contradicted {
			// An exact claim is wrong: someone changed a header without
			// the index. Trust nothing it says.
			return r.pageByScan(workspaceID, sd, opt, true)
		}
	}
	switch {
	case records > 2*len(names)+512:
		// Mostly superseded records: compact by rebuilding.
		r.rebuildSummaries(workspaceID, sd)
	case len(unknown) > 0:
		r.adoptUnknown(sd, unknown)
	}
	out := make([]Summary, len(page))
	for i := range page {
		out[i] = page[i].Summary()
	}
	if lerr != nil {
		return out, lerr
	}
	return out, nil
}

// adoptUnknown appends exact claims for sessions the index does not know
// (a writer that does not maintain it made them), so that later lists need
// not read them. The index holds the scope's flock exclusively while the
// headers are read (summary.Index.Adopt): they are the published ones.
func (r *Root) adoptUnknown(sd string, names []string) {
	head, tail := make([]byte, listHeadSize), make([]byte, 64)
	r.summaryIndex().Adopt(sd, names, func(name string) (summary.Claim, bool) {
		dir := filepath.Join(sd, name)
		hpath := filepath.Join(dir, headerFile)
		h, err := r.readListHeader(hpath, head, tail)
		switch {
		case err == nil && checkPlace(&h, dir, hpath) == nil:
			return summaryClaim(&h), true
		case errors.Is(err, ErrUnsupportedFormat), errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return summary.Claim{State: summary.Other}, true
		}
		return summary.Claim{}, false
	})
}

// entryHeader reads the header of the entry name of the scope directory
// sd as List does, through the buffers head and tail. ok is false when the
// entry holds no session of this format (not a session, deleted since the
// directory was read, another format); else malformed, when not nil, is
// what List reports of its header. err is a failure to read it.
func (r *Root) entryHeader(sd, name string, head, tail []byte) (h Header, ok bool, malformed, err error) {
	dir := filepath.Join(sd, name)
	hpath := filepath.Join(dir, headerFile)
	h, err = r.readListHeader(hpath, head, tail)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Header{}, false, nil, nil
	}
	if rerr, isRead := err.(*readError); isRead {
		return Header{}, false, nil, fmt.Errorf("read %s: %w", hpath, rerr.err)
	}
	if errors.Is(err, ErrUnsupportedFormat) {
		return Header{}, false, nil, nil
	}
	if err == nil {
		err = checkPlace(&h, dir, hpath)
	}
	return h, true, err, nil
}

// sessionNames returns the names under a scope directory that may be
// sessions (directories without a leading dot), as scan reads them.
func (r *Root) sessionNames(sd string) ([]string, error) {
	entries, err := r.fs.ReadDir(sd)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("list sessions in %s: %w", sd, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) > 0 && e.Name()[0] != '.' {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// pageByScan is ListPage by reading every header, as List does; with
// rebuild it also rewrites the index from what it read.
func (r *Root) pageByScan(workspaceID, sd string, opt PageOptions, rebuild bool) ([]Summary, error) {
	heads, err := r.scanRebuilding(workspaceID, sd, rebuild)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return nil, err
	}
	all := summarize(heads, opt.Archived)
	start := 0
	for start < len(all) && !opt.After.older(all[start].UpdatedAt, all[start].ID) {
		start++
	}
	page := all[start:]
	if opt.Limit > 0 && len(page) > opt.Limit {
		page = page[:opt.Limit]
	}
	return page, err
}
