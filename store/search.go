package store

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf16"
)

// SearchQuery is one full-text search (docs/protocol.md, session/search).
type SearchQuery struct {
	// Text holds words and "quoted phrases"; every one must occur.
	Text string
	// Scopes are the workspace ids to search ("" is the independent
	// collection).
	Scopes []string
	// Limit is the page size (1 to MaxSearchLimit; 0 means
	// DefaultSearchLimit).
	Limit int
	// Cursor continues a previous page of the same search.
	Cursor string
	// IncludeTools searches tool results too.
	IncludeTools bool
	// Archived searches archived sessions instead of the others.
	Archived bool
}

// SearchHit is one matching message.
type SearchHit struct {
	SessionID    string
	WorkspaceID  *string
	Title        string
	MessageIndex int
	Role         string
	// Snippet is an excerpt of the message's text around its first match,
	// white space collapsed; Ranges are the matches in it, in UTF-16 code
	// units from the snippet's start, end exclusive.
	Snippet   string
	Ranges    []SearchRange
	UpdatedAt int64
}

// SearchRange is [Start, End) in UTF-16 code units of a snippet.
type SearchRange struct{ Start, End int }

// SearchResult is one page of hits, best first.
type SearchResult struct {
	Hits       []SearchHit
	NextCursor string
}

const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	maxSearchQuery     = 4096 // bytes
	maxSearchTerms     = 32
	// Snippets show about this many runes of text, the first match
	// snippetLead runes in when the text is cut.
	snippetRunes = 160
	snippetLead  = 40
	// A term's occurrences count towards the score up to this many.
	maxTermCount = 8
)

// searchTerm is a folded word or phrase; words is its number of words.
type searchTerm struct {
	text  []byte
	words int
}

// parseSearchTerms splits a query into folded words and quoted phrases.
// An unclosed quote runs to the end of the query.
func parseSearchTerms(q string) ([]searchTerm, error) {
	if len(q) > maxSearchQuery {
		return nil, fmt.Errorf("%w: query longer than %d bytes", ErrInvalid, maxSearchQuery)
	}
	f := newFolder()
	var terms []searchTerm
	add := func(s string) {
		t := f.fold(nil, s, maxSearchQuery)
		if len(t) == 0 {
			return
		}
		for _, o := range terms {
			if bytes.Equal(o.text, t) {
				return
			}
		}
		terms = append(terms, searchTerm{text: t, words: bytes.Count(t, []byte{' '}) + 1})
	}
	for rest := q; rest != ""; {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				add(rest[1:])
				break
			}
			add(rest[1 : 1+end])
			rest = rest[2+end:]
			continue
		}
		end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(rest)
		}
		add(rest[:end])
		rest = rest[end:]
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: the query has no words", ErrInvalid)
	}
	if len(terms) > maxSearchTerms {
		return nil, fmt.Errorf("%w: more than %d words and phrases", ErrInvalid, maxSearchTerms)
	}
	return terms, nil
}

// searchKey orders hits: higher score, then the more recently updated
// session, then the larger session id, then the earlier message.
type searchKey struct {
	Score     int    `json:"s"`
	UpdatedAt int64  `json:"u"`
	ID        string `json:"id"`
	Index     int    `json:"i"`
}

func compareKeys(a, b *searchKey) int {
	switch {
	case a.Score != b.Score:
		return cmpDesc(int64(a.Score), int64(b.Score))
	case a.UpdatedAt != b.UpdatedAt:
		return cmpDesc(a.UpdatedAt, b.UpdatedAt)
	case a.ID != b.ID:
		if a.ID > b.ID {
			return -1
		}
		return 1
	case a.Index != b.Index:
		return cmpDesc(int64(b.Index), int64(a.Index))
	}
	return 0
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	if a < b {
		return 1
	}
	return 0
}

type searchCursor struct {
	V int    `json:"v"`
	Q string `json:"q"`
	searchKey
}

// searchFingerprint identifies a search, so that a cursor is refused by
// another one.
func searchFingerprint(terms []searchTerm, q *SearchQuery) string {
	h := crc32.NewIEEE()
	for _, t := range terms {
		h.Write(t.text)
		h.Write([]byte{0})
	}
	fmt.Fprintf(h, "%v|%v|%s", q.IncludeTools, q.Archived, strings.Join(q.Scopes, ","))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

func encodeCursor(fp string, k *searchKey) string {
	data, _ := json.Marshal(searchCursor{V: 1, Q: fp, searchKey: *k})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(s, fp string) (*searchKey, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	var c searchCursor
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil || c.V != 1 {
		return nil, fmt.Errorf("%w: cursor is not one this server returned", ErrInvalid)
	}
	if c.Q != fp {
		return nil, fmt.Errorf("%w: cursor belongs to another search", ErrInvalid)
	}
	return &c.searchKey, nil
}

// Search finds messages that contain every word and phrase of the query
// (docs/protocol.md, session/search). It reads each scope's search index
// (building it when missing or corrupt, catching it up from the headers
// when this process has not checked it yet or knows it lags), ranks the
// candidates, and checks each hit of the page against the committed
// message before returning it.
func (r *Root) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	terms, err := parseSearchTerms(q.Text)
	if err != nil {
		return SearchResult{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	if limit < 1 || limit > MaxSearchLimit {
		return SearchResult{}, fmt.Errorf("%w: limit must be 1 to %d", ErrInvalid, MaxSearchLimit)
	}
	fp := searchFingerprint(terms, &q)
	var after *searchKey
	if q.Cursor != "" {
		if after, err = decodeCursor(q.Cursor, fp); err != nil {
			return SearchResult{}, err
		}
	}
	tab := &searchTable{byID: map[string]int32{}}
	var cands []searchCand
	for si, ws := range q.Scopes {
		c, err := r.searchScope(ctx, ws, si, terms, &q, tab)
		if err != nil {
			return SearchResult{}, err
		}
		cands = append(cands, c...)
	}
	// The page takes the best candidates that the logs confirm; a few
	// more than the page are ranked, and more only when too few are.
	for k := 2*limit + 8; ; k *= 4 {
		ranked, more := tab.rank(cands, &q, after, k)
		res, done, err := r.searchPage(ranked, more, tab, terms, &q, limit, fp)
		if err != nil || done {
			return res, err
		}
	}
}

// searchSess is what the index says of one session.
type searchSess struct {
	id        string
	scope     int
	createdAt int64
	updatedAt int64
	covered   int
	archived  bool
	dead      bool // checked against the headers: no longer there
}

type searchTable struct {
	byID map[string]int32
	s    []searchSess
}

func (t *searchTable) get(id []byte, scope int) int32 {
	if i, ok := t.byID[string(id)]; ok {
		return i
	}
	i := int32(len(t.s))
	t.s = append(t.s, searchSess{id: string(id), scope: scope})
	t.byID[string(id)] = i
	return i
}

// searchCand is a matching index line: 24 bytes, however long the text.
type searchCand struct {
	createdAt int64
	sess      int32
	idx       int32
	score     int32
	role      byte
}

type rankedCand struct {
	key  searchKey
	cand searchCand
}

// rank drops candidates the index's metadata excludes (another incarnation
// of the id, the other archive state, gone) and those not after the
// cursor, and returns the best k of the rest in order (all of them when
// fewer), and whether more were left out. A bounded heap keeps the memory
// at k ranked entries however many candidates match.
func (t *searchTable) rank(cands []searchCand, q *SearchQuery, after *searchKey, k int) ([]rankedCand, bool) {
	h := make(rankHeap, 0, min(k, len(cands)))
	more := false
	for _, c := range cands {
		s := &t.s[c.sess]
		if s.dead || s.createdAt != c.createdAt || s.archived != q.Archived {
			continue
		}
		key := searchKey{Score: int(c.score), UpdatedAt: s.updatedAt, ID: s.id, Index: int(c.idx)}
		if after != nil && compareKeys(&key, after) <= 0 {
			continue
		}
		if len(h) < k {
			heap.Push(&h, rankedCand{key: key, cand: c})
			continue
		}
		more = true
		if compareKeys(&key, &h[0].key) < 0 {
			h[0] = rankedCand{key: key, cand: c}
			heap.Fix(&h, 0)
		}
	}
	out := []rankedCand(h)
	slices.SortFunc(out, func(a, b rankedCand) int { return compareKeys(&a.key, &b.key) })
	// An append retried after a failure may repeat lines.
	return slices.CompactFunc(out, func(a, b rankedCand) bool { return a.key == b.key }), more
}

// rankHeap keeps the worst of the best k at its root.
type rankHeap []rankedCand

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return compareKeys(&h[i].key, &h[j].key) > 0 }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(rankedCand)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

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
	rebuilt := false
	// checking: compare with the headers this time, which needs the state
	// of every session; otherwise only that of the sessions with a
	// candidate is kept (a session's last "h" line follows all its "m"
	// lines, since every append ends with one).
	checkedIno, checked := r.searchChecked(scopeDir)
	checking := !checked
	for attempt := 0; ; attempt++ {
		// Tool lines first: the index's "h" lines, which name the
		// candidates' sessions, are all read after them.
		var cands []searchCand
		var ino uint64
		var err error
		if q.IncludeTools {
			cands, _, err = r.scanSearch(ctx, filepath.Join(scopeDir, searchDirName, searchToolsName), si, terms, q, tab, checking)
		}
		if err == nil {
			var mc []searchCand
			mc, ino, err = r.scanSearch(ctx, path, si, terms, q, tab, checking)
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
			rebuilt, checking = true, true
			continue
		}
		if err != nil {
			return nil, err
		}
		if attempt > 2 || (!checking && ino == checkedIno) {
			return cands, nil
		}
		if !checking {
			// Another process replaced the index since this one checked it.
			reset()
			checking = true
			continue
		}
		// Not checked by this process yet, or known to lag: compare with
		// the headers, catch up what lags, and read again.
		staleScopes.Delete(scopeDir)
		lag, err := r.searchLags(ws, tab, first)
		if err != nil {
			return nil, err
		}
		if len(lag) == 0 {
			r.setSearchChecked(scopeDir, ino)
			return cands, nil
		}
		reset()
		if err := r.catchUpSearch(scopeDir, ws, lag); err != nil {
			markSearchStale(scopeDir)
			return r.scanLogs(ctx, ws, si, terms, q, tab)
		}
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
	if _, stale := staleScopes.Load(scopeDir); stale {
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
// the scope's headers: it marks the gone ones dead and returns those whose
// header is ahead of the index.
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
		j, ok := tab.byID[h.ID]
		covered := 0
		if ok && int(j) >= first {
			s := &tab.s[j]
			if s.createdAt == h.CreatedAt {
				covered = s.covered
				if covered >= h.MessageCount && s.updatedAt == h.UpdatedAt && s.archived == (h.ArchivedAt != nil) {
					continue
				}
			}
		}
		lag = append(lag, searchLag{head: *h, covered: max(covered, 0)})
	}
	for i := first; i < len(tab.s); i++ {
		if !live[tab.s[i].id] {
			tab.s[i].dead = true
		}
	}
	return lag, nil
}

// scanSearch reads one index file line by line with a fixed buffer and
// returns its matching lines. errSearchRebuild: missing, of another
// version, or a line that does not parse or fails its checksum.
func (r *Root) scanSearch(ctx context.Context, path string, si int, terms []searchTerm, q *SearchQuery, tab *searchTable, all bool) ([]searchCand, uint64, error) {
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
			if !headerLine(line[2:], si, tab, all) {
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
// covered, archived): to every session with all, else only to those the
// table has (those with a candidate).
func headerLine(b []byte, si int, tab *searchTable, all bool) bool {
	var f [5][]byte
	if !fields(b, f[:]) || len(f[0]) != 36 {
		return false
	}
	created, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	updated, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	covered, err3 := strconv.ParseInt(string(f[3]), 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || len(f[4]) != 1 || (f[4][0] != '0' && f[4][0] != '1') {
		return false
	}
	i, ok := tab.byID[string(f[0])]
	if !ok {
		if !all {
			return true
		}
		i = tab.get(f[0], si)
	}
	s := &tab.s[i]
	if s.createdAt != created {
		s.createdAt, s.covered = created, 0
	}
	s.updatedAt = updated
	s.archived = f[4][0] == '1'
	if int(covered) > s.covered {
		s.covered = int(covered)
	}
	return true
}

// searchPage checks the ranked candidates against the headers and logs, in
// order, until the page is full.
// more: candidates were left out of ranked. done: the page is full, or no
// candidate is left.
func (r *Root) searchPage(ranked []rankedCand, more bool, tab *searchTable, terms []searchTerm, q *SearchQuery, limit int, fp string) (res SearchResult, done bool, err error) {
	res = SearchResult{Hits: []SearchHit{}}
	heads := map[int32]*Header{}
	fo := newFolder()
	for i := range ranked {
		rc := &ranked[i]
		if len(res.Hits) == limit {
			res.NextCursor = encodeCursor(fp, &ranked[i-1].key)
			return res, true, nil
		}
		s := &tab.s[rc.cand.sess]
		ws := q.Scopes[s.scope]
		h, ok := heads[rc.cand.sess]
		if !ok {
			hd, err := r.ReadHeader(ws, s.id)
			if err == nil {
				h = &hd
			}
			heads[rc.cand.sess] = h
		}
		scopeDir, _ := r.scopeDir(ws)
		if h == nil || h.CreatedAt != rc.cand.createdAt || (h.ArchivedAt != nil) != q.Archived || rc.key.Index >= h.MessageCount {
			if h != nil {
				markSearchStale(scopeDir)
			}
			continue
		}
		msgs, err := r.ReadMessages(ws, s.id, rc.key.Index, rc.key.Index+1)
		if err != nil || len(msgs) != 1 || roleCode(msgs[0].Role) != rc.cand.role {
			continue
		}
		snippet, ranges, ok := makeSnippet(fo.view(messageSearchText(&msgs[0])), terms)
		if !ok {
			// The index disagrees with the log: the log wins, and the
			// index is checked again on the next search.
			markSearchStale(scopeDir)
			continue
		}
		res.Hits = append(res.Hits, SearchHit{
			SessionID: s.id, WorkspaceID: wsPtr(ws), Title: h.Title,
			MessageIndex: rc.key.Index, Role: msgs[0].Role,
			Snippet: snippet, Ranges: ranges, UpdatedAt: h.UpdatedAt,
		})
	}
	if len(res.Hits) == limit && more {
		res.NextCursor = encodeCursor(fp, &ranked[len(ranked)-1].key)
		return res, true, nil
	}
	return res, len(res.Hits) == limit || !more, nil
}

// makeSnippet cuts the excerpt around the first match and returns it with
// every match inside it; ok is false when some term does not occur.
func makeSnippet(v foldedView, terms []searchTerm) (string, []SearchRange, bool) {
	type span struct{ s, e int } // runes of v.disp
	var spans []span
	for _, t := range terms {
		found := false
		for off := 0; off < len(v.text); {
			j := bytes.Index(v.text[off:], t.text)
			if j < 0 {
				break
			}
			fs, fe := off+j, off+j+len(t.text)
			spans = append(spans, span{int(v.at[fs]), int(v.at[fe-1]) + 1})
			found = true
			off = fe
		}
		if !found {
			return "", nil, false
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.s - b.s })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.s <= last.e {
			last.e = max(last.e, sp.e)
			continue
		}
		merged = append(merged, sp)
	}
	start := max(0, merged[0].s-snippetLead)
	end := min(len(v.disp), start+snippetRunes)
	if end == len(v.disp) {
		start = max(0, end-snippetRunes)
	}
	var b strings.Builder
	units := 0
	if start > 0 {
		b.WriteString("…")
		units++
	}
	// pos[i] is the UTF-16 offset of rune start+i in the snippet.
	pos := make([]int, end-start+1)
	for i := start; i < end; i++ {
		pos[i-start] = units
		b.WriteRune(v.disp[i])
		units += utf16.RuneLen(v.disp[i])
	}
	pos[end-start] = units
	if end < len(v.disp) {
		b.WriteString("…")
	}
	var ranges []SearchRange
	for _, sp := range merged {
		s, e := max(sp.s, start), min(sp.e, end)
		if s >= e {
			continue
		}
		ranges = append(ranges, SearchRange{Start: pos[s-start], End: pos[e-start]})
	}
	return b.String(), ranges, true
}
