package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Reading a scope's search index (docs/storage.md, Search index): the
// candidates of a query, and keeping the index in step with the headers.

// searchScope returns the candidates of one scope's index.
func (r *Root) searchScope(ctx context.Context, ws string, si int, terms []searchTerm, q *SearchQuery, tab *searchTable) ([]searchCand, error) {
	scopeDir, err := r.scopeDir(ws)
	if err != nil {
		return nil, err
	}
	if _, err := r.fs.Stat(scopeDir); errors.Is(err, os.ErrNotExist) {
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
	// Every session's state is kept (its "h" lines), so that a gap in what
	// the index holds of any session shows; the first search of a scope in
	// this process, and every one after this process failed to append
	// there or another replaced the index, also compares it with the
	// headers, which finds what the index lacks at a session's end.
	checkedIno, checked := r.searchChecked(scopeDir)
	for {
		// Tool lines first: the index's "h" lines, which name the
		// candidates' sessions, are all read after them.
		var cands []searchCand
		var ino uint64
		var err error
		if q.IncludeTools {
			cands, _, err = r.scanSearch(ctx, filepath.Join(scopeDir, searchDirName, searchToolsName), si, terms, q, tab)
		}
		if err == nil {
			var mc []searchCand
			mc, ino, err = r.scanSearch(ctx, path, si, terms, q, tab)
			cands = append(cands, mc...)
		}
		if errors.Is(err, errSearchRebuild) && !rebuilt {
			reset()
			if err := r.rebuildSearch(ctx, scopeDir, ws); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				// A root that cannot hold an index (read-only, full) is
				// still searched, from the logs.
				return r.scanLogs(ctx, ws, si, terms, q, tab)
			}
			rebuilt, checked = true, false
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
		var lag []searchLag
		headers := !checked || ino != checkedIno
		if headers {
			// Not checked by this process yet, known to lag, or replaced:
			// compare with the headers.
			r.marks.clearSearchStale(scopeDir)
			lag, err = r.searchLags(ws, tab, first)
		} else {
			lag, err = r.searchGaps(ws, tab, first)
		}
		if err != nil {
			return nil, err
		}
		if headers {
			r.setSearchChecked(scopeDir, ino)
			checkedIno, checked = ino, true
		}
		if len(lag) == 0 {
			return cands, nil
		}
		reset()
		if err := r.catchUpSearch(scopeDir, ws, lag); err != nil {
			r.marks.markSearchStale(scopeDir)
			return r.scanLogs(ctx, ws, si, terms, q, tab)
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
func (r *Root) scanLogs(ctx context.Context, ws string, si int, terms []searchTerm, q *SearchQuery, tab *searchTable) ([]searchCand, error) {
	heads, err := r.scan(ws)
	var lerr *ListError
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
		msgs, err := r.ReadMessages(ws, h.ID, 0, h.MessageCount)
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
					tab.s[sess].archived, tab.s[sess].covered = h.ArchivedAt != nil, h.MessageCount
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
func (r *Root) searchChecked(scopeDir string) (ino uint64, ok bool) {
	if r.marks.searchStale(scopeDir) {
		return 0, false
	}
	r.searchMu.Lock()
	defer r.searchMu.Unlock()
	ino, ok = r.searchOK[scopeDir]
	return ino, ok
}

func (r *Root) setSearchChecked(scopeDir string, ino uint64) {
	r.searchMu.Lock()
	defer r.searchMu.Unlock()
	if r.searchOK == nil {
		r.searchOK = map[string]uint64{}
	}
	r.searchOK[scopeDir] = ino
}

// searchLags compares the sessions the index knows (tab.s[first:]) with
// the scope's headers: it marks the gone ones dead and returns those the
// index lags: a gap, messages past what it holds, or other metadata.
func (r *Root) searchLags(ws string, tab *searchTable, first int) ([]searchLag, error) {
	heads, err := r.scan(ws)
	var lerr *ListError
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
		if g, ok := lagOf(s, h, true); ok {
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

// searchGaps returns the sessions of tab.s[first:] whose ranges in the
// index leave a gap, reading only their headers: what a search that does
// not compare the whole scope with its headers finds missing.
func (r *Root) searchGaps(ws string, tab *searchTable, first int) ([]searchLag, error) {
	var lag []searchLag
	for i := first; i < len(tab.s); i++ {
		s := &tab.s[i]
		if len(s.ahead) == 0 {
			continue
		}
		h, err := r.ReadHeader(ws, s.id)
		if errors.Is(err, ErrSessionNotFound) {
			s.dead = true
			continue
		}
		if err != nil {
			// Unreadable now: its hits could not be checked either.
			continue
		}
		if g, ok := lagOf(s, &h, false); ok {
			lag = append(lag, g)
		}
	}
	return lag, nil
}

// lagOf compares what the index holds of a session (s; nil when it holds
// nothing) with its header h: the messages it lacks (the gaps, and with
// tail the messages past its last range), and whether anything lags, the
// metadata included.
func lagOf(s *searchSess, h *Header, tail bool) (searchLag, bool) {
	if s == nil || s.createdAt != h.CreatedAt {
		// Nothing of this incarnation of the id.
		return searchLag{head: *h, holes: (&searchSess{}).holes(h.MessageCount, true)}, true
	}
	holes := s.holes(h.MessageCount, tail)
	if len(holes) == 0 && s.updatedAt == h.UpdatedAt && s.archived == (h.ArchivedAt != nil) {
		return searchLag{}, false
	}
	return searchLag{head: *h, holes: holes}, true
}

// scanSearch reads one index file line by line with a fixed buffer and
// returns its matching lines; tab takes every session's state from its
// "h" lines. errSearchRebuild: missing, of another version, or a line that
// does not parse or fails its checksum.
func (r *Root) scanSearch(ctx context.Context, path string, si int, terms []searchTerm, q *SearchQuery, tab *searchTable) ([]searchCand, uint64, error) {
	f, err := r.fs.OpenFile(path, os.O_RDONLY, 0)
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
			if !headerLine(line[2:], si, tab) {
				return nil, 0, errSearchRebuild
			}
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
	if err1 != nil || err2 != nil || err3 != nil || idx < 0 || uint32(crc) != crcUpdate(0, text) {
		return c, false, true
	}
	return searchCand{createdAt: created, idx: int32(idx), score: int32(score), role: f[3][0]}, true, false
}

// headerLine applies an "h" line (after "h\t": id, createdAt, updatedAt,
// from, to, archived) to its session's state.
func headerLine(b []byte, si int, tab *searchTable) bool {
	var f [6][]byte
	if !fields(b, f[:]) || len(f[0]) != 36 {
		return false
	}
	created, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	updated, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	from, err3 := strconv.ParseInt(string(f[3]), 10, 32)
	to, err4 := strconv.ParseInt(string(f[4]), 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || from < 0 || to < from ||
		len(f[5]) != 1 || (f[5][0] != '0' && f[5][0] != '1') {
		return false
	}
	s := &tab.s[tab.get(f[0], si)]
	if s.createdAt != created {
		// Another session of the same id: what the index held of the
		// earlier one says nothing of this one.
		s.createdAt, s.covered, s.ahead = created, 0, nil
	}
	s.updatedAt = updated
	s.archived = f[5][0] == '1'
	s.cover(msgRange{int(from), int(to)})
	return true
}
