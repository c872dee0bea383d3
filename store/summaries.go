package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// The summary index (docs/storage.md, "Summary index"): sessions/<scope>/.summaries
// holds one small line per change of a session's place in the list, so
// that the first page of a list reads the headers of that page, not of the
// whole scope. It is derived data. Each line makes a claim about one
// session: its updatedAt and which lists it may belong to. The latest line
// of an id is its claim, and the protocol keeps every claim at or above
// the truth (a session never ranks higher, nor belongs to more lists, than
// its claim says); a claim marked exact equals the header's. Readers verify
// every session they return against its header; an index that is missing,
// damaged or disagrees with an exact claim is rebuilt from the headers.
const (
	summariesFile   = ".summaries"
	summariesHeader = "loop-summaries 1\n"
	// summaryLineSize is the length of one record line, "\n" included.
	summaryLineSize = 2 + 1 + 36 + 1 + 16 + 1 + 8 + 1
	// maxUnknown is how many directory names the index may not know (made
	// by a writer that does not maintain it) before a list rebuilds it
	// instead of reading their headers one by one.
	maxUnknown = 64
)

// Record states.
const (
	claimExact     = 'e' // the header's updatedAt and lists, as published
	claimLoose     = 'l' // an upper bound: a change is being published
	claimMalformed = 'm' // the header was malformed at the last rebuild
	claimOther     = 'x' // not a session of this format (no header, another format)
	claimDeleted   = 'd' // the directory was deleted
)

// Claim flags: the lists a session may belong to.
const (
	inUnarchived = 1 // not archived, holds a user message
	inArchived   = 2
)

// claim is one record: what the index says about a session.
type claim struct {
	state     byte
	flags     byte
	updatedAt int64
}

func claimOf(h *Header) claim {
	c := claim{state: claimExact, updatedAt: h.UpdatedAt}
	switch {
	case h.ArchivedAt != nil:
		c.flags = inArchived
	case h.UserMessageCount > 0:
		c.flags = inUnarchived
	}
	return c
}

func appendSummaryLine(b []byte, id string, c claim) []byte {
	start := len(b)
	b = append(b, c.state, "0123456789abcdef"[c.flags&0xf], ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = appendHex(b, uint64(c.updatedAt), 16)
	b = append(b, ' ')
	b = appendHex(b, uint64(crcUpdate(0, b[start:])), 8)
	return append(b, '\n')
}

func appendHex(b []byte, v uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, "0123456789abcdef"[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// parseSummaryLine decodes one record line (without its "\n"). The id
// is a slice of line.
func parseSummaryLine(line []byte) ([]byte, claim, bool) {
	if len(line) != summaryLineSize-1 || line[2] != ' ' || line[39] != ' ' || line[56] != ' ' {
		return nil, claim{}, false
	}
	crc, ok1 := parseHex(line[57:])
	flags, ok2 := parseHex(line[1:2])
	u, ok3 := parseHex(line[40:56])
	id := line[3:39]
	if !ok1 || !ok2 || !ok3 || uint32(crc) != crcUpdate(0, line[:57]) || int64(u) < 0 || !canonicalUUID(id) {
		return nil, claim{}, false
	}
	switch line[0] {
	case claimExact, claimLoose, claimMalformed, claimOther, claimDeleted:
	default:
		return nil, claim{}, false
	}
	return id, claim{state: line[0], flags: byte(flags), updatedAt: int64(u)}, true
}

// parseHex reads lower-case hex digits.
func parseHex(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// canonicalUUID is validID without allocating: 36 lower-case hex digits
// and dashes in the canonical places.
func canonicalUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if _, ok := parseHex(b[i : i+1]); !ok {
			return false
		}
	}
	return true
}

// parseSummaries decodes an index file: the latest claim of each id and
// the number of records. ok is false for a file that is not an index or
// holds a damaged line.
func parseSummaries(data []byte) (map[string]claim, int, bool) {
	claims := map[string]claim{}
	n, _, ok := scanSummaries(data, func(id []byte, c claim) { claims[string(id)] = c })
	if !ok {
		return nil, 0, false
	}
	return claims, n, true
}

func parseSummariesTorn(data []byte) (map[string]claim, int, bool, bool) {
	claims := map[string]claim{}
	n, torn, ok := scanSummaries(data, func(id []byte, c claim) { claims[string(id)] = c })
	if !ok {
		return nil, 0, false, false
	}
	return claims, n, torn, true
}

// scanSummaries calls visit for each record of an index file, in order,
// and counts them. ok is false for a file that is not an index or holds a
// damaged line; visit may have seen part of it then. An unterminated last
// line is left out (torn says there is one): it may be a write in
// progress, whose writer has not published what it announces yet.
func scanSummaries(data []byte, visit func(id []byte, c claim)) (n int, torn, ok bool) {
	if !bytes.HasPrefix(data, []byte(summariesHeader)) {
		return 0, false, false
	}
	data = data[len(summariesHeader):]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return n, true, true
		}
		id, c, ok := parseSummaryLine(data[:i])
		if !ok {
			return 0, false, false
		}
		visit(id, c)
		n++
		data = data[i+1:]
	}
	return n, false, true
}

// tornForGood reports whether an unterminated last line of the index is
// not a write in progress: no writer holds the scope's flock. Writers
// append under the shared lock, so getting it exclusively means none is
// writing; the line was cut (a full disk, a crash, damage) and the index
// cannot be trusted.
func (r *Root) tornForGood(sd string) bool {
	lock, err := r.fs.Lock(sd)
	if err != nil {
		return false
	}
	defer lock.Close()
	data, err := r.fs.ReadFile(filepath.Join(sd, summariesFile))
	if err != nil {
		return true
	}
	_, _, torn, ok := parseSummariesTorn(data)
	return !ok || torn
}

// summaryObserver keeps the summary index in step with every header
// publish (an Observer, store/observer.go): it announces each change
// before the header is published and confirms it after.
type summaryObserver struct{ r *Root }

func (o summaryObserver) Publishing(scopeDir, id string, old, next *Header) Publication {
	if t := beginClaim(o.r.fs, o.r.marks, scopeDir, id, old, next); t != nil {
		return t
	}
	return nil
}

func (summaryObserver) Committed(*Commit) error         { return nil }
func (summaryObserver) SavedMeta(string, *Header) error { return nil }
func (o summaryObserver) Deleted(scopeDir, id string)   { noteDeleted(o.r.fs, o.r.marks, scopeDir, id) }

// claimTx is one writer's change of a session's claim around a header
// publish. It holds a shared flock on the scope directory from the first
// record to the last, so that no rebuild (which takes it exclusively)
// replaces the index in between. A failed index write never fails the
// write it accompanies: the index is removed (a list rebuilds it) or, if
// that fails too, marked stale in this process.
type claimTx struct {
	fs    fsys
	marks *scopeMarks
	scope string
	id    string
	final claim
	lock  io.Closer
	f     fileHandle
	done  chan struct{} // closed when the announcing record is durable
}

// beginClaim announces a change from header old to next (old nil: the
// session is being created) before next is published. A change that
// leaves the claim as it is (a title, a pin, a read receipt) costs
// nothing. Otherwise an update appends a loose claim covering both
// headers and fsyncs it, in the background (Ready waits for it before
// the publish); a creation appends next's exact claim, not fsynced: a
// directory the index does not know is read directly. nil means there
// is nothing to do.
func beginClaim(fs fsys, marks *scopeMarks, scope, id string, old, next *Header) *claimTx {
	nc := claimOf(next)
	if old != nil && claimOf(old) == nc {
		return nil
	}
	t := &claimTx{fs: fs, marks: marks, scope: scope, id: id, final: nc, done: make(chan struct{})}
	announce := nc
	if old != nil {
		oc := claimOf(old)
		announce = claim{state: claimLoose, flags: oc.flags | nc.flags, updatedAt: max(oc.updatedAt, nc.updatedAt)}
	}
	run := func() {
		defer close(t.done)
		lock, err := fs.LockShared(scope)
		if err != nil {
			// No lock, no record: the index must go. Without the lock a
			// rebuild may put one back that lacks this change, so this
			// process also stops trusting it.
			t.invalidate()
			marks.markSummariesStale(scope)
			return
		}
		t.lock = lock
		f, err := fs.OpenFile(filepath.Join(scope, summariesFile), os.O_WRONLY|os.O_APPEND, 0)
		if errors.Is(err, os.ErrNotExist) {
			return // no index: lists scan and build one
		}
		if err != nil {
			t.invalidate()
			return
		}
		t.f = f
		if _, err := f.Write(appendSummaryLine(nil, id, announce)); err != nil {
			t.invalidate()
			return
		}
		if old != nil {
			// The loose claim must be durable before the header it covers.
			if err := f.Sync(); err != nil {
				t.invalidate()
			}
		}
	}
	if old == nil {
		run()
		t.final = claim{} // announced exactly already
	} else {
		go run()
	}
	return t
}

// Ready returns once the announcing record is durable (or given up).
func (t *claimTx) Ready() {
	<-t.done
}

// Done closes the change: published says next is now the header, and its
// exact claim replaces the loose one. Otherwise the loose claim stays,
// which is still an upper bound.
func (t *claimTx) Done(published bool) {
	t.Ready()
	if published && t.f != nil && t.final != (claim{}) {
		if _, err := t.f.Write(appendSummaryLine(nil, t.id, t.final)); err != nil {
			t.invalidate()
		}
	}
	t.close()
}

func (t *claimTx) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if t.lock != nil {
		t.lock.Close()
		t.lock = nil
	}
}

// invalidate removes the index after a failed write; lists rebuild it.
func (t *claimTx) invalidate() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if err := t.fs.RemoveAll(filepath.Join(t.scope, summariesFile)); err != nil {
		t.marks.markSummariesStale(t.scope)
	}
}

// noteDeleted appends a tombstone after a session directory was hidden.
// It only saves later lists a lookup: a claim of a directory that is gone
// is ignored anyway.
func noteDeleted(fs fsys, marks *scopeMarks, scope, id string) {
	t := &claimTx{fs: fs, marks: marks, scope: scope, id: id, final: claim{state: claimDeleted}, done: make(chan struct{})}
	close(t.done)
	lock, err := fs.LockShared(scope)
	if err != nil {
		return
	}
	t.lock = lock
	f, err := fs.OpenFile(filepath.Join(scope, summariesFile), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		t.f = f
		t.Done(true)
		return
	}
	t.close()
}

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

// scanRebuilding reads every header of the scope, as List does; with
// rebuild it also rewrites the index from what it read. err is a
// *ListError alongside the headers that could be read, or another error
// and no headers.
func (r *Root) scanRebuilding(workspaceID, sd string, rebuild bool) ([]Header, error) {
	var prep *rebuildPrep
	if rebuild {
		prep = r.prepareRebuild(sd)
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return nil, err
	}
	if prep != nil {
		prep.finish(heads, others)
	}
	return heads, err
}

// rebuildSummaries rewrites the index from every header of the scope.
func (r *Root) rebuildSummaries(workspaceID, sd string) {
	prep := r.prepareRebuild(sd)
	if prep == nil {
		return
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return
	}
	prep.finish(heads, others)
}

// rebuildPrep is a rebuild under way: the index file it started from, so
// that records writers append while the headers are read are kept.
type rebuildPrep struct {
	r        *Root
	sd       string
	fi       os.FileInfo
	size     int64
	gen      uint64
	wasStale bool
}

// prepareRebuild makes sure an index file exists (so that writers append
// their records while the headers are read) and notes its identity and
// size. It takes the scope's flock exclusively without waiting: a writer
// in the middle of a change makes the rebuild wait for a later list. nil
// means no rebuild now.
func (r *Root) prepareRebuild(sd string) *rebuildPrep {
	p := &rebuildPrep{r: r, sd: sd}
	p.gen, p.wasStale = r.marks.summariesStale(sd)
	lock, err := r.fs.Lock(sd)
	if err != nil {
		return nil
	}
	defer lock.Close()
	path := filepath.Join(sd, summariesFile)
	fi, err := r.fs.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		f, cerr := r.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr != nil {
			return nil
		}
		_, werr := f.Write([]byte(summariesHeader))
		f.Close()
		if werr != nil {
			r.fs.RemoveAll(path)
			return nil
		}
		fi, err = r.fs.Stat(path)
	}
	if err != nil {
		return nil
	}
	p.fi, p.size = fi, fi.Size()
	return p
}

// finish writes the new index: one exact claim per session read, then the
// records writers appended since prepareRebuild, whose claims are newer.
// It replaces the index only if that is still the file it started from,
// under the exclusive flock (no writer between its records), through a
// temporary file, fsync, rename and a directory fsync.
func (p *rebuildPrep) finish(heads []Header, others []scanOther) {
	fs := p.r.fs
	buf := make([]byte, 0, len(summariesHeader)+(len(heads)+len(others))*summaryLineSize)
	buf = append(buf, summariesHeader...)
	for i := range heads {
		buf = appendSummaryLine(buf, heads[i].ID, claimOf(&heads[i]))
	}
	for _, o := range others {
		if !validID(o.name) {
			continue // no record can name it; lists read it every time
		}
		st := byte(claimOther)
		if o.malformed {
			st = claimMalformed
		}
		buf = appendSummaryLine(buf, o.name, claim{state: st})
	}
	// The new file is written and fsynced before the lock is taken:
	// writers wait for the lock, so it covers only what must be atomic.
	path := filepath.Join(p.sd, summariesFile)
	f, tmp, err := createUnique(fs, path+".tmp-")
	if err != nil {
		return
	}
	if err := writeSyncClose(f, tmp, buf); err != nil {
		fs.RemoveAll(tmp)
		return
	}
	published := false
	defer func() {
		if !published {
			fs.RemoveAll(tmp)
		}
	}()
	lock, err := fs.Lock(p.sd)
	if err != nil {
		return
	}
	defer lock.Close()
	fi, err := fs.Stat(path)
	if err != nil || !os.SameFile(fi, p.fi) || fi.Size() < p.size {
		return // replaced or removed meanwhile: a later list rebuilds
	}
	if fi.Size() > p.size {
		data, err := fs.ReadFile(path)
		if err != nil || int64(len(data)) < p.size {
			return
		}
		tail := data[p.size:]
		// Writers append whole lines under the shared lock, and none
		// holds it now, so the tail is whole lines.
		if _, torn, ok := scanSummaries(append([]byte(summariesHeader), tail...), func([]byte, claim) {}); !ok || torn {
			return
		}
		f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		if err := writeSyncClose(f, tmp, tail); err != nil {
			return
		}
	}
	if err := fs.Rename(tmp, path); err != nil {
		return
	}
	published = true
	if err := fs.SyncDir(p.sd); err != nil {
		// The rename may not survive a crash; the old file that would
		// come back lacks the records appended from now on.
		fs.RemoveAll(path)
		return
	}
	p.r.marks.clearSummariesStale(p.sd, p.gen, p.wasStale)
}

// summarize filters and orders headers as List does.
func summarize(heads []Header, archived bool) []Summary {
	out := make([]Summary, 0, len(heads))
	for i := range heads {
		h := &heads[i]
		if archived {
			if h.ArchivedAt == nil {
				continue
			}
		} else if h.ArchivedAt != nil || h.UserMessageCount == 0 {
			continue
		}
		out = append(out, h.Summary())
	}
	slices.SortFunc(out, func(a, b Summary) int {
		switch {
		case a.UpdatedAt != b.UpdatedAt:
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}

// indexClaims reads the scope's summary index: the claim of each of names
// (state 0: none) and how many records it holds. ok is false when this
// process marked it stale, it cannot be read, or its last line is torn and
// no writer is finishing it: the index is to be rebuilt, as one that is
// missing.
func (r *Root) indexClaims(sd string, names []string) (claims []claim, records int, ok bool) {
	if _, stale := r.marks.summariesStale(sd); stale {
		return nil, 0, false
	}
	data, _ := r.fs.ReadFile(filepath.Join(sd, summariesFile))
	pos := make(map[string]int, len(names))
	for i, name := range names {
		pos[name] = i
	}
	claims = make([]claim, len(names))
	records, torn, ok := scanSummaries(data, func(id []byte, c claim) {
		if i, ok := pos[string(id)]; ok {
			claims[i] = c
		}
	})
	if !ok || (torn && r.tornForGood(sd)) {
		return nil, 0, false
	}
	return claims, records, true
}
