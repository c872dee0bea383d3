package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Reading a scope's search index (docs/storage.md, Search index): the
// candidates of a query, and keeping the index in step with the headers.

// searchScope returns the candidates of one scope's index.
func (ix *Index) searchScope(ctx context.Context, ws string, si int, terms []searchTerm, q *Query, tab *searchTable) ([]searchCand, error) {
	scopeDir, err := ix.root.ScopeDir(ws)
	if err != nil {
		return nil, err
	}
	if _, err := ix.fs.Stat(scopeDir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	path := filepath.Join(scopeDir, searchDirName, searchIndexName)
	first := len(tab.s)
	reset := func() {
		for _, s := range tab.s[first:] {
			delete(tab.byID, s.id)
		}
		tab.s = tab.s[:first]
	}
	rebuilt, caughtUp := false, false
	// What the index holds of every session it names is kept (cov), so
	// that a gap shows whichever session it is in. The first search of a
	// scope in this process, and every one after this process failed to
	// append there or another replaced the index, also compares the index
	// with the headers, which finds what it lacks at a session's end; only
	// that one keeps every session's metadata (all), the others only that
	// of the sessions with a candidate (a session's last "h" line follows
	// all its "m" lines, since every append ends with one).
	checkedIno, checked := ix.searchChecked(scopeDir)
	all := !checked
	for {
		// Tool lines first: the index's "h" lines, which name the
		// candidates' sessions, are all read after them.
		var cands []searchCand
		var ino uint64
		var err error
		cov := map[sessionKey]coverage{}
		var links []searchLink
		if q.IncludeTools {
			cands, _, err = ix.scanSearch(ctx, filepath.Join(scopeDir, searchDirName, searchToolsName), si, terms, q, tab, all, cov, nil)
		}
		if err == nil {
			var mc []searchCand
			mc, ino, err = ix.scanSearch(ctx, path, si, terms, q, tab, all, cov, &links)
			cands = append(cands, mc...)
		}
		if err == nil {
			cands = inherit(cands, links, tab)
			setCounts(tab, first, cov)
		}
		if errors.Is(err, errSearchRebuild) && !rebuilt {
			reset()
			if err := ix.rebuildSearch(ctx, scopeDir, ws); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				// A root that cannot hold an index (read-only, full) is
				// still searched, from the logs.
				return ix.scanLogs(ctx, ws, si, terms, q, tab)
			}
			rebuilt, checked, all = true, false, true
			continue
		}
		if err != nil {
			return nil, err
		}
		if caughtUp {
			// What could not be caught up (a log that cannot be read) is
			// tried again by the next search.
			return cands, nil
		}
		if checked && ino != checkedIno && !all {
			// Another process replaced the index since this one checked
			// it: read it again, keeping every session's metadata.
			reset()
			checked, all = false, true
			continue
		}
		var lag []searchLag
		if !checked {
			// Not checked by this process yet, or known to lag: compare
			// with the headers.
			ix.clearStale(scopeDir)
			if lag, err = ix.searchLags(ws, tab, first, cov); err != nil {
				return nil, err
			}
			ix.setSearchChecked(scopeDir, ino)
			checkedIno, checked = ino, true
		} else {
			lag = ix.searchGaps(ws, tab, first, cov)
		}
		if len(lag) == 0 {
			return cands, nil
		}
		reset()
		if err := ix.catchUpSearch(scopeDir, ws, lag); err != nil {
			ix.markStale(scopeDir)
			return ix.scanLogs(ctx, ws, si, terms, q, tab)
		}
		// Read again, with what was appended.
		caughtUp = true
	}
}

var errSearchRebuild = errors.New("search index missing or corrupt")

// scanLogs searches a scope without its index, reading every session's
// log: the way out when the index can be neither built nor brought up to
// date. It is slow (docs/performance.md, BenchmarkSearchScan10000) but
// holds one session's history at a time.
func (ix *Index) scanLogs(ctx context.Context, ws string, si int, terms []searchTerm, q *Query, tab *searchTable) ([]searchCand, error) {
	heads, err := ix.root.Headers(ws)
	var lerr *store.ListError
	if err != nil && !errors.As(err, &lerr) && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	fo := newFolder()
	var cands []searchCand
	for i := range heads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := &heads[i]
		msgs, err := ix.root.ReadMessages(ws, h.ID, 0, h.MessageCount)
		if err != nil {
			continue
		}
		var l searchLines
		l.addMessages(fo, h.ID, h.CreatedAt, 0, msgs)
		if !q.IncludeTools {
			l.tools = nil
		}
		var sess int32 = -1
		for _, buf := range [][]byte{l.main, l.tools} {
			for len(buf) > 0 {
				end := bytes.IndexByte(buf, '\n')
				line := buf[2:end]
				buf = buf[end+1:]
				c, ok, _ := matchLine(line, terms, q.IncludeTools)
				if !ok {
					continue
				}
				if sess < 0 {
					sess = tab.get([]byte(h.ID), si)
					tab.s[sess].createdAt, tab.s[sess].updatedAt = h.CreatedAt, h.UpdatedAt
					tab.s[sess].archived = h.ArchivedAt != nil
				}
				c.sess = sess
				cands = append(cands, c)
			}
		}
	}
	return cands, nil
}

// searchChecked returns the inode of the index file this process last
// compared with the headers; ok is false when it never did, or an append
// of its own failed since.
func (ix *Index) searchChecked(scopeDir string) (ino uint64, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.stale[scopeDir] {
		return 0, false
	}
	ino, ok = ix.checked[scopeDir]
	return ino, ok
}

func (ix *Index) setSearchChecked(scopeDir string, ino uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.checked[scopeDir] = ino
}

// searchLags compares what the index says of the scope's sessions (tab.s[first:],
// every one's metadata, and cov) with their headers: it marks the gone ones
// dead and returns those the index lags: a gap, messages past what it holds,
// or other metadata.
func (ix *Index) searchLags(ws string, tab *searchTable, first int, cov map[sessionKey]coverage) ([]searchLag, error) {
	heads, err := ix.root.Headers(ws)
	var lerr *store.ListError
	if err != nil && !errors.As(err, &lerr) && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	live := make(map[string]bool, len(heads))
	var lag []searchLag
	for i := range heads {
		h := &heads[i]
		live[h.ID] = true
		var s *searchSess
		if j, ok := tab.byID[h.ID]; ok && int(j) >= first {
			s = &tab.s[j]
		}
		k, _ := keyOf(h.ID)
		if g, ok := lagOf(s, cov[k], h, true); ok {
			lag = append(lag, g)
		}
	}
	for i := first; i < len(tab.s); i++ {
		if !live[tab.s[i].id] {
			tab.s[i].dead = true
		}
	}
	return lag, nil
}

// searchGaps returns the sessions whose ranges in the index (cov) leave a
// gap, reading only their headers: what a search that does not compare the
// whole scope with its headers finds missing.
func (ix *Index) searchGaps(ws string, tab *searchTable, first int, cov map[sessionKey]coverage) []searchLag {
	var lag []searchLag
	for k, c := range cov {
		if len(c.ahead) == 0 && c.covered >= c.count {
			continue
		}
		id := k.String()
		var s *searchSess
		if j, ok := tab.byID[id]; ok && int(j) >= first {
			s = &tab.s[j]
		}
		h, err := ix.root.ReadHeader(ws, id)
		if err != nil {
			// Gone (its candidates are checked against the headers
			// anyway), or unreadable now: its hits could not be checked
			// either.
			continue
		}
		if g, ok := lagOf(s, c, &h, false); ok {
			lag = append(lag, g)
		}
	}
	// In the order of their ids, not the map's: the same index gets the
	// same appends.
	slices.SortFunc(lag, func(a, b searchLag) int { return strings.Compare(a.head.ID, b.head.ID) })
	return lag
}

// lagOf compares what the index holds of a session (its coverage c, and
// s, its metadata when the index says it; nil when not kept) with its
// header h: the messages the index lacks (the gaps, and with tail the
// messages past its last range), and whether anything lags, the metadata
// included.
func lagOf(s *searchSess, c coverage, h *store.Header, tail bool) (searchLag, bool) {
	if c.createdAt != h.CreatedAt {
		// Nothing of this incarnation of the id.
		return searchLag{head: *h, holes: (&coverage{}).holes(h.MessageCount, true)}, true
	}
	holes := c.holes(h.MessageCount, tail)
	if len(holes) == 0 && (s == nil || s.createdAt == h.CreatedAt && s.updatedAt == h.UpdatedAt && s.archived == (h.ArchivedAt != nil)) {
		return searchLag{}, false
	}
	return searchLag{head: *h, holes: holes}, true
}

// scanSearch reads one index file line by line with a fixed buffer and
// returns its matching lines. Its "h" lines give cov every session's
// coverage and tab the metadata of every session with all, else of those
// with a candidate or a parent; its "p" lines go to links (nil: the
// tools file, which has none). errSearchRebuild: missing, of another
// version, or a line that does not parse or fails its checksum.
func (ix *Index) scanSearch(ctx context.Context, path string, si int, terms []searchTerm, q *Query, tab *searchTable, all bool, cov map[sessionKey]coverage, links *[]searchLink) ([]searchCand, uint64, error) {
	f, err := ix.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		// Missing, or unreadable: build it again, or else read the logs.
		return nil, 0, errSearchRebuild
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, fi.Size()), 1<<20)
	magic, err := br.ReadSlice('\n')
	if err != nil || string(magic) != searchMagic {
		return nil, 0, errSearchRebuild
	}
	var cands []searchCand
	var long []byte
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxIndexedText+256 {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			// A torn last line (a crash in an append) is ignored; an
			// append after it makes a line that fails to parse.
			return cands, ino, nil
		}
		if err != nil {
			// An over-long line, or a read error.
			return nil, 0, errSearchRebuild
		}
		line = line[:len(line)-1]
		switch {
		case len(line) > 2 && line[0] == 'm' && line[1] == '\t':
			c, ok, bad := matchLine(line[2:], terms, q.IncludeTools)
			if bad {
				return nil, 0, errSearchRebuild
			}
			if ok {
				c.sess = tab.get(line[2:2+36], si)
				cands = append(cands, c)
			}
		case len(line) > 2 && line[0] == 'h' && line[1] == '\t':
			if !headerLine(line[2:], si, tab, all, cov) {
				return nil, 0, errSearchRebuild
			}
		case len(line) > 2 && line[0] == 'p' && line[1] == '\t' && links != nil:
			l, ok := parentLine(line[2:], si, tab, cov)
			if !ok {
				return nil, 0, errSearchRebuild
			}
			*links = append(*links, l)
		default:
			return nil, 0, errSearchRebuild
		}
	}
}

// fields splits b at tabs into dst (at most len(dst) fields, the last
// taking the rest); it reports whether all were filled.
func fields(b []byte, dst [][]byte) bool {
	for i := range dst {
		if i == len(dst)-1 {
			dst[i] = b
			return true
		}
		j := bytes.IndexByte(b, '\t')
		if j < 0 {
			return false
		}
		dst[i], b = b[:j], b[j+1:]
	}
	return true
}

// matchLine checks an "m" line (after "m\t": id, createdAt, index, role,
// crc, text) against the terms. bad: the line does not parse, or it
// matched and its text fails the checksum.
func matchLine(b []byte, terms []searchTerm, tools bool) (c searchCand, ok, bad bool) {
	var f [6][]byte
	if !fields(b, f[:]) || len(f[0]) != 36 || len(f[3]) != 1 {
		return c, false, true
	}
	if f[3][0] == 't' && !tools {
		return c, false, false
	}
	text := f[5]
	score := 0
	for i := range terms {
		t := terms[i].text
		n := bytes.Count(text, t)
		if n == 0 {
			return c, false, false
		}
		score += min(n, maxTermCount) * terms[i].words
	}
	crc, err1 := strconv.ParseUint(string(f[4]), 16, 32)
	created, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	idx, err3 := strconv.ParseInt(string(f[2]), 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || idx < 0 || uint32(crc) != fsys.CRC32C(0, text) {
		return c, false, true
	}
	return searchCand{createdAt: created, idx: int32(idx), score: int32(score), crc: uint32(crc), role: f[3][0]}, true, false
}

// headerLine applies an "h" line (after "h\t": id, createdAt, updatedAt,
// from, to, archived, writer): its range to the session's coverage (a
// writer's first cuts what it held from "from" on), its metadata to the
// session in tab (with all, every session; else only those tab has,
// those with a candidate or a parent).
func headerLine(b []byte, si int, tab *searchTable, all bool, cov map[sessionKey]coverage) bool {
	var f [7][]byte
	if !fields(b, f[:]) || len(f[6]) != 1 || (f[6][0] != headWriter && f[6][0] != headCatchUp) {
		return false
	}
	k, ok := keyOf(f[0])
	created, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	updated, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	from, err3 := strconv.ParseInt(string(f[3]), 10, 32)
	to, err4 := strconv.ParseInt(string(f[4]), 10, 32)
	if !ok || err1 != nil || err2 != nil || err3 != nil || err4 != nil || from < 0 || to < from ||
		len(f[5]) != 1 || (f[5][0] != '0' && f[5][0] != '1') {
		return false
	}
	c := cov[k]
	if c.createdAt != created {
		// Another session of the same id: what the index held of the
		// earlier one says nothing of this one.
		c = coverage{createdAt: created}
	}
	if f[6][0] == headWriter {
		c.cut(int(from))
		c.count = int(to)
	} else {
		c.count = max(c.count, int(to))
	}
	c.cover(msgRange{int(from), int(to)})
	cov[k] = c
	i, ok := tab.byID[string(f[0])]
	if !ok {
		if !all {
			return true
		}
		i = tab.get(f[0], si)
	}
	s := &tab.s[i]
	s.createdAt = created
	s.updatedAt = updated
	s.archived = f[5][0] == '1'
	return true
}

// searchLink is a "p" line: the first count messages of session child
// (of createdAt) are those of session parent.
type searchLink struct {
	child     int32
	createdAt int64
	parent    string
	count     int
}

// parentLine applies a "p" line (after "p\t": id, createdAt, parent id,
// count): the fork gets what the index holds of its parent's part, and a
// place in tab (its "h" lines follow), and the link is returned.
func parentLine(b []byte, si int, tab *searchTable, cov map[sessionKey]coverage) (searchLink, bool) {
	var f [4][]byte
	if !fields(b, f[:]) {
		return searchLink{}, false
	}
	k, ok1 := keyOf(f[0])
	pk, ok2 := keyOf(f[2])
	created, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	count, err2 := strconv.ParseInt(string(f[3]), 10, 32)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || count < 0 || k == pk {
		return searchLink{}, false
	}
	c := cov[k]
	if c.createdAt != created {
		c = coverage{createdAt: created}
	}
	p := cov[pk]
	c.inherit(&p, int(count))
	cov[k] = c
	return searchLink{child: tab.get(f[0], si), createdAt: created, parent: string(f[2]), count: int(count)}, true
}

// inherit adds to cands, for each link in the order of the "p" lines (a
// fork's before those of its own forks), the parent's candidates in the
// fork's part as the fork's: a fork's part is not in the index again.
// They are checked against the fork's messages like any other.
func inherit(cands []searchCand, links []searchLink, tab *searchTable) []searchCand {
	if len(links) == 0 {
		return cands
	}
	bySess := map[int32][]int{}
	for i := range cands {
		bySess[cands[i].sess] = append(bySess[cands[i].sess], i)
	}
	for _, l := range links {
		p, ok := tab.byID[l.parent]
		if !ok {
			continue // no candidate of the parent
		}
		for _, i := range bySess[p] {
			c := cands[i]
			if int(c.idx) >= l.count {
				continue
			}
			c.sess, c.createdAt = l.child, l.createdAt
			bySess[l.child] = append(bySess[l.child], len(cands))
			cands = append(cands, c)
		}
	}
	return cands
}

// setCounts gives the sessions of the scope (tab.s[first:]) the message
// counts their coverage says, so that rank leaves out lines of messages
// a rewind dropped.
func setCounts(tab *searchTable, first int, cov map[sessionKey]coverage) {
	for i := first; i < len(tab.s); i++ {
		s := &tab.s[i]
		k, _ := keyOf(s.id)
		if c, ok := cov[k]; ok && c.createdAt == s.createdAt {
			s.count, s.counted = c.count, true
		}
	}
}
