package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// A page of a list through the summary index (docs/storage.md, "Summary
// index", Reading a page); store/summaries.go has the index's format.

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
	claims, records, ok := r.indexClaims(sd, names)
	if !ok {
		return r.pageByScan(workspaceID, sd, opt, true)
	}
	want := byte(inUnarchived)
	if opt.Archived {
		want = inArchived
	}
	type cand struct {
		name string
		c    claim
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
		case c.state == 0, c.state == claimDeleted:
			unknown = append(unknown, name)
		case c.state == claimMalformed:
			// Read every time: a malformed header is reported, as List does.
			malformedNames = append(malformedNames, name)
		case c.state == claimOther, c.flags&want == 0:
		case c.state == claimExact && !opt.After.older(c.updatedAt, name):
			// Exactly placed before the cursor.
		default:
			cands = append(cands, cand{name, c})
		}
	}
	if len(unknown) > maxUnknown {
		return r.pageByScan(workspaceID, sd, opt, true)
	}
	// A heap, not a sort: the loop below takes about limit candidates of
	// thousands.
	above := func(i, j int) bool {
		return newerThan(cands[i].c.updatedAt, cands[i].name, cands[j].c.updatedAt, cands[j].name)
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
	read := func(name string, c *claim) error {
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
		if c != nil && c.state == claimExact && claimOf(&h) != *c {
			contradicted = true
		}
		if opt.Archived != (h.ArchivedAt != nil) || (!opt.Archived && h.UserMessageCount == 0) ||
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
			if newerThan(last.UpdatedAt, last.ID, c.c.updatedAt, c.name) {
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
// not read them. It holds the scope's flock exclusively, without waiting:
// no writer is then between its announcement and its publish, so the
// headers it reads are the published ones, and any change after it goes
// through a later record.
func (r *Root) adoptUnknown(sd string, names []string) {
	lock, err := r.fs.Lock(sd)
	if err != nil {
		return
	}
	defer lock.Close()
	f, err := r.fs.OpenFile(filepath.Join(sd, summariesFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	head, tail := make([]byte, listHeadSize), make([]byte, 64)
	var buf []byte
	for _, name := range names {
		dir := filepath.Join(sd, name)
		hpath := filepath.Join(dir, headerFile)
		h, err := r.readListHeader(hpath, head, tail)
		switch {
		case !validID(name):
		case err == nil && checkPlace(&h, dir, hpath) == nil:
			buf = appendSummaryLine(buf, name, claimOf(&h))
		case errors.Is(err, ErrUnsupportedFormat), errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			buf = appendSummaryLine(buf, name, claim{state: claimOther})
		}
	}
	if len(buf) > 0 {
		// One write: the records land whole, among other appenders' (a
		// torn one makes lists rebuild).
		if _, err := f.Write(buf); err != nil && r.fs.RemoveAll(filepath.Join(sd, summariesFile)) != nil {
			r.marks.markSummariesStale(sd)
		}
	}
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
