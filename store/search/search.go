package search

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/fsys"
)

// Query is one full-text search (docs/protocol.md, session/search).
type Query struct {
	// Text holds words and "quoted phrases"; every one must occur.
	Text string
	// Scopes are the workspace ids to search ("" is the independent
	// collection).
	Scopes []string
	// Limit is the page size (1 to MaxLimit; 0 means
	// DefaultLimit).
	Limit int
	// Cursor continues a previous page of the same search.
	Cursor string
	// IncludeTools searches tool results too.
	IncludeTools bool
	// Archived searches archived sessions instead of the others.
	Archived bool
}

// Hit is one matching message.
type Hit struct {
	SessionID    string
	WorkspaceID  *string
	Title        string
	MessageIndex int
	Role         string
	// Snippet is an excerpt of the message's text around its first match,
	// white space collapsed; Ranges are the matches in it, in UTF-16 code
	// units from the snippet's start, end exclusive.
	Snippet   string
	Ranges    []Range
	UpdatedAt int64
}

// Range is [Start, End) in UTF-16 code units of a snippet.
type Range struct{ Start, End int }

// Result is one page of hits, best first.
type Result struct {
	Hits       []Hit
	NextCursor string
}

const (
	DefaultLimit   = 20
	MaxLimit       = 100
	maxSearchQuery = 4096 // bytes
	maxSearchTerms = 32
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
		return nil, fmt.Errorf("%w: query longer than %d bytes", store.ErrInvalid, maxSearchQuery)
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
		return nil, fmt.Errorf("%w: the query has no words", store.ErrInvalid)
	}
	if len(terms) > maxSearchTerms {
		return nil, fmt.Errorf("%w: more than %d words and phrases", store.ErrInvalid, maxSearchTerms)
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
func searchFingerprint(terms []searchTerm, q *Query) string {
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
		return nil, fmt.Errorf("%w: cursor is not one this server returned", store.ErrInvalid)
	}
	if c.Q != fp {
		return nil, fmt.Errorf("%w: cursor belongs to another search", store.ErrInvalid)
	}
	return &c.searchKey, nil
}

// Search finds messages that contain every word and phrase of the query
// (docs/protocol.md, session/search). It reads each scope's search index
// (building it when missing or corrupt, catching it up from the headers
// when this process has not checked it yet or knows it lags), ranks the
// candidates, and checks each hit of the page against the committed
// message before returning it.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	terms, err := parseSearchTerms(q.Text)
	if err != nil {
		return Result{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return Result{}, fmt.Errorf("%w: limit must be 1 to %d", store.ErrInvalid, MaxLimit)
	}
	fp := searchFingerprint(terms, &q)
	var after *searchKey
	if q.Cursor != "" {
		if after, err = decodeCursor(q.Cursor, fp); err != nil {
			return Result{}, err
		}
	}
	tab := &searchTable{byID: map[string]int32{}}
	var cands []searchCand
	for si, ws := range q.Scopes {
		c, err := ix.searchScope(ctx, ws, si, terms, &q, tab)
		if err != nil {
			return Result{}, err
		}
		cands = append(cands, c...)
	}
	// The page takes the best candidates that the logs confirm; a few
	// more than the page are ranked, and more only when too few are.
	for k := 2*limit + 8; ; k *= 4 {
		ranked, more := tab.rank(cands, &q, after, k)
		res, done, err := ix.searchPage(ranked, more, tab, terms, &q, limit, fp)
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
	archived  bool
	dead      bool // checked against the headers: no longer there
	// count, when counted, is the number of messages the index says the
	// session has: lines past it are of messages a rewind dropped.
	count   int
	counted bool
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

// searchCand is a matching index line: 32 bytes, however long the text.
type searchCand struct {
	createdAt int64
	sess      int32
	idx       int32
	score     int32
	crc       uint32 // of the line's text: which text of the message it is
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
func (t *searchTable) rank(cands []searchCand, q *Query, after *searchKey, k int) ([]rankedCand, bool) {
	h := make(rankHeap, 0, min(k, len(cands)))
	more := false
	for _, c := range cands {
		s := &t.s[c.sess]
		if s.dead || s.createdAt != c.createdAt || s.archived != q.Archived || s.counted && int(c.idx) >= s.count {
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
	slices.SortFunc(out, func(a, b rankedCand) int {
		if c := compareKeys(&a.key, &b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.cand.crc, b.cand.crc)
	})
	// An append retried after a failure, a catch-up that raced a commit
	// or a fork's parent may repeat lines. Lines of one message with
	// other text (before and after a rewind) are all kept: searchPage
	// keeps the one whose text is the message's.
	return slices.CompactFunc(out, func(a, b rankedCand) bool { return a.key == b.key && a.cand.crc == b.cand.crc }), more
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

// searchPage checks the ranked candidates against the headers and logs, in
// order, until the page is full.
// more: candidates were left out of ranked. done: the page is full, or no
// candidate is left.
func (ix *Index) searchPage(ranked []rankedCand, more bool, tab *searchTable, terms []searchTerm, q *Query, limit int, fp string) (res Result, done bool, err error) {
	res = Result{Hits: []Hit{}}
	heads := map[int32]*store.Header{}
	fo := newFolder()
	var folded []byte
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
			hd, err := ix.root.ReadHeader(ws, s.id)
			if err == nil {
				h = &hd
			}
			heads[rc.cand.sess] = h
		}
		scopeDir, _ := ix.root.ScopeDir(ws)
		if h == nil || h.CreatedAt != rc.cand.createdAt || (h.ArchivedAt != nil) != q.Archived || rc.key.Index >= h.MessageCount {
			if h != nil {
				ix.markStale(scopeDir)
			}
			continue
		}
		msgs, err := ix.root.ReadMessages(ws, s.id, rc.key.Index, rc.key.Index+1)
		if err != nil || len(msgs) != 1 || roleCode(msgs[0].Role) != rc.cand.role {
			continue
		}
		text := messageSearchText(&msgs[0])
		if folded = fo.fold(folded[:0], text, maxIndexedText); fsys.CRC32C(0, folded) != rc.cand.crc {
			// A line of other text at this index: what a rewind dropped
			// (the session's, or its parent's, for a fork), whose
			// message's line is another.
			continue
		}
		snippet, ranges, ok := makeSnippet(fo.view(text), terms)
		if !ok {
			// The index disagrees with the log: the log wins, and the
			// index is checked again on the next search.
			ix.markStale(scopeDir)
			continue
		}
		res.Hits = append(res.Hits, Hit{
			SessionID: s.id, WorkspaceID: workspacePtr(ws), Title: h.Title,
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

// workspacePtr is a hit's workspace id: nil for the independent collection.
func workspacePtr(ws string) *string {
	if ws == "" {
		return nil
	}
	return &ws
}
