package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/storetest"
)

// newSearchSession commits texts (user, assistant, user, ... ) as a new
// independent session.
func newSearchSession(t testing.TB, r *testRoot, texts ...string) *store.Session {
	t.Helper()
	s := r.Draft("", t.TempDir())
	mustCommit(t, s, storetest.Turns(texts...), nil, nil)
	return s
}

func search(t testing.TB, r *testRoot, q Query) Result {
	t.Helper()
	if q.Scopes == nil {
		q.Scopes = []string{""}
	}
	res, err := r.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %q: %v", q.Text, err)
	}
	return res
}

func hitIDs(res Result) []string {
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.SessionID[len(h.SessionID)-4:]+"#"+string(rune('0'+h.MessageIndex)))
	}
	return out
}

func TestSearchFindsANewCommitAtOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "hello world", "an answer")
	if got := search(t, r, Query{Text: "zebra"}); len(got.Hits) != 0 {
		t.Fatalf("hits before the commit: %v", got.Hits)
	}
	mustCommit(t, s, append(s.Messages(), storetest.TextMessage(convo.RoleUser, "a Zebra crossing")), nil, nil)
	got := search(t, r, Query{Text: "zebra"})
	if len(got.Hits) != 1 || got.Hits[0].MessageIndex != 2 || got.Hits[0].Role != convo.RoleUser || got.Hits[0].SessionID != s.ID() {
		t.Fatalf("hits = %+v", got.Hits)
	}
	if h := got.Hits[0]; h.Snippet != "a Zebra crossing" || len(h.Ranges) != 1 || h.Ranges[0] != (Range{2, 7}) {
		t.Fatalf("snippet %q ranges %v", h.Snippet, h.Ranges)
	}
}

func TestSearchFoldsCaseFully(t *testing.T) {
	r, _ := newTestRoot(t)
	newSearchSession(t, r, "Die Straße ist lang", "ΣΊΣΥΦΟΣ und café")
	for _, q := range []string{"STRASSE", "straße", "strasse", "σίσυφος", "CAFÉ"} {
		if got := search(t, r, Query{Text: q}); len(got.Hits) != 1 {
			t.Errorf("%q: %d hits", q, len(got.Hits))
		}
	}
	// Accents are kept as written.
	if got := search(t, r, Query{Text: "cafe"}); len(got.Hits) != 0 {
		t.Errorf("cafe matched café")
	}
	got := search(t, r, Query{Text: "STRASSE"})
	if h := got.Hits[0]; h.Snippet != "Die Straße ist lang" || h.Ranges[0] != (Range{4, 10}) {
		t.Fatalf("snippet %q ranges %v", h.Snippet, h.Ranges)
	}
}

func TestSearchRangesCountUTF16Units(t *testing.T) {
	r, _ := newTestRoot(t)
	newSearchSession(t, r, "😀 find me")
	got := search(t, r, Query{Text: "find"})
	if h := got.Hits[0]; h.Ranges[0] != (Range{3, 7}) {
		t.Fatalf("ranges %v in %q", h.Ranges, h.Snippet)
	}
}

func TestSearchPhraseNeedsAdjacentWords(t *testing.T) {
	r, _ := newTestRoot(t)
	a := newSearchSession(t, r, "the quick brown\n fox")
	b := newSearchSession(t, r, "brown and quick")
	if got := search(t, r, Query{Text: `"quick brown"`}); len(got.Hits) != 1 || got.Hits[0].SessionID != a.ID() {
		t.Fatalf("phrase hits %v", hitIDs(got))
	}
	if got := search(t, r, Query{Text: `"brown fox"`}); len(got.Hits) != 1 {
		t.Fatalf("a phrase across a line break: %v", hitIDs(got))
	}
	got := search(t, r, Query{Text: `quick brown`})
	if len(got.Hits) != 2 || got.Hits[0].SessionID != b.ID() {
		t.Fatalf("words hits %v (ties: the newer session first)", hitIDs(got))
	}
	if got := search(t, r, Query{Text: `quick missing`}); len(got.Hits) != 0 {
		t.Fatalf("every word is required: %v", hitIDs(got))
	}
}

func TestSearchRanksMoreMatchesFirst(t *testing.T) {
	r, _ := newTestRoot(t)
	many := newSearchSession(t, r, "go go go")
	newSearchSession(t, r, "go once")
	got := search(t, r, Query{Text: "go"})
	if len(got.Hits) != 2 || got.Hits[0].SessionID != many.ID() {
		t.Fatalf("hits %v", hitIDs(got))
	}
}

func TestSearchToolResultsOnlyWhenAsked(t *testing.T) {
	r, _ := newTestRoot(t)
	s := r.Draft("", t.TempDir())
	mustCommit(t, s, []convo.Message{storetest.TextMessage(convo.RoleUser, "run it"), storetest.TextMessage(convo.RoleToolResult, "needle output")}, nil, nil)
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 0 {
		t.Fatalf("tool result found without includeTools")
	}
	got := search(t, r, Query{Text: "needle", IncludeTools: true})
	if len(got.Hits) != 1 || got.Hits[0].Role != convo.RoleToolResult {
		t.Fatalf("hits %+v", got.Hits)
	}
}

func TestSearchArchivedOnlyWhenAsked(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "archived needle")
	open := newSearchSession(t, r, "open needle")
	if err := s.SetArchived(true); err != nil {
		t.Fatal(err)
	}
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 1 || got.Hits[0].SessionID != open.ID() {
		t.Fatalf("unarchived: %v", hitIDs(got))
	}
	if got := search(t, r, Query{Text: "needle", Archived: true}); len(got.Hits) != 1 || got.Hits[0].SessionID != s.ID() {
		t.Fatalf("archived: %v", hitIDs(got))
	}
	// Archived without opening the session, as for one that cannot open.
	s.Close()
	if err := r.SetSessionArchived("", s.ID(), false); err != nil {
		t.Fatal(err)
	}
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 2 {
		t.Fatalf("after unarchiving: %v", hitIDs(got))
	}
}

func TestSearchPagesWithACursor(t *testing.T) {
	r, _ := newTestRoot(t)
	for range 5 {
		newSearchSession(t, r, "page me", "page me too")
	}
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		got := search(t, r, Query{Text: "page", Limit: 3, Cursor: cursor})
		pages++
		for _, h := range got.Hits {
			k := h.SessionID + string(rune('0'+h.MessageIndex))
			if seen[k] {
				t.Fatalf("hit %s twice", k)
			}
			seen[k] = true
		}
		if got.NextCursor == "" {
			break
		}
		cursor = got.NextCursor
	}
	if len(seen) != 10 || pages != 4 {
		t.Fatalf("%d hits over %d pages", len(seen), pages)
	}
	if _, err := r.Search(context.Background(), Query{Text: "other", Scopes: []string{""}, Cursor: cursor}); err == nil {
		t.Fatal("a cursor of another search was accepted")
	}
}

func TestSearchRejectsEmptyQueriesAndBadLimits(t *testing.T) {
	r, _ := newTestRoot(t)
	for _, q := range []Query{{Text: "  "}, {Text: `""`}, {Text: "x", Limit: -1}, {Text: "x", Limit: MaxLimit + 1}, {Text: "x", Cursor: "%%%"}} {
		q.Scopes = []string{""}
		if _, err := r.Search(context.Background(), q); err == nil || !strings.Contains(err.Error(), store.ErrInvalid.Error()) {
			t.Errorf("%+v: %v", q, err)
		}
	}
}

func searchIndexPath(r *testRoot, ws string) string {
	sd, _ := r.scopeDir(ws)
	return filepath.Join(sd, searchDirName, searchIndexName)
}

func TestSearchRebuildsAMissingOrCorruptIndex(t *testing.T) {
	for _, damage := range []string{"delete", "garbage", "flipped byte"} {
		t.Run(damage, func(t *testing.T) {
			r, _ := newTestRoot(t)
			newSearchSession(t, r, "first needle")
			search(t, r, Query{Text: "needle"}) // builds the index
			path := searchIndexPath(r, "")
			switch damage {
			case "delete":
				os.Remove(path)
			case "garbage":
				os.WriteFile(path, []byte("not an index\n\x00\x01"), 0o600)
			case "flipped byte":
				data, _ := os.ReadFile(path)
				// The line still matches; its checksum no longer does.
				i := strings.Index(string(data), "first")
				data[i] = 'F'
				os.WriteFile(path, data, 0o600)
			}
			newSearchSession(t, r, "second needle")
			if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 2 {
				t.Fatalf("after %s: %v", damage, hitIDs(got))
			}
			data, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(data), searchMagic) || strings.Count(string(data), "needle") != 2 {
				t.Fatalf("index not rebuilt:\n%s", data)
			}
		})
	}
}

func TestFailingSearchIndexAppendNeverFailsACommit(t *testing.T) {
	for _, fc := range []struct{ op, suffix string }{
		{"lock", searchDirName},
		{"open", filepath.Join(searchDirName, searchToolsName)},
		{"open", filepath.Join(searchDirName, searchIndexName)},
		{"write", filepath.Join(searchDirName, searchIndexName)},
	} {
		t.Run(fc.op+" "+filepath.Base(fc.suffix), func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s := newSearchSession(t, r, "hello")
			search(t, r, Query{Text: "hello"})
			ffs.FailOnce(fc.op, fc.suffix, storetest.Fault{Err: syscall.EIO, Partial: 5})
			msgs := append(s.Messages(), storetest.TextMessage(convo.RoleAssistant, "late needle"), storetest.TextMessage(convo.RoleToolResult, "tool needle"))
			if err := s.Commit(msgs, nil, nil); err != nil {
				t.Fatalf("commit failed with its index append: %v", err)
			}
			// This process knows its append failed and catches up.
			if got := search(t, r, Query{Text: "needle", IncludeTools: true}); len(got.Hits) != 2 {
				t.Fatalf("hits %v", hitIDs(got))
			}
			// The session's next commit appends what it missed, too.
			mustCommit(t, s, append(msgs, storetest.TextMessage(convo.RoleUser, "more")), nil, nil)
			r.ix.clearStale(filepath.Dir(filepath.Dir(searchIndexPath(r, ""))))
			r2 := openRoot(t, r.Dir())
			if got := search(t, r2, Query{Text: "needle", IncludeTools: true}); len(got.Hits) != 2 {
				t.Fatalf("another process: hits %v", hitIDs(got))
			}
		})
	}
}

func TestSearchCatchesUpAnIndexAnotherProcessLeftBehind(t *testing.T) {
	r, ffs := newTestRoot(t)
	s := newSearchSession(t, r, "hello")
	search(t, r, Query{Text: "hello"})
	ffs.FailOnce("open", filepath.Join(searchDirName, searchIndexName), storetest.Fault{Err: syscall.EIO})
	mustCommit(t, s, append(s.Messages(), storetest.TextMessage(convo.RoleAssistant, "late needle")), nil, nil)
	// Another process knows nothing of the failure.
	r.ix.clearStale(filepath.Dir(filepath.Dir(searchIndexPath(r, ""))))
	r2 := openRoot(t, r.Dir())
	if got := search(t, r2, Query{Text: "needle"}); len(got.Hits) != 1 {
		t.Fatalf("hits %v", hitIDs(got))
	}
}

func TestSearchHitsAreCheckedAgainstTheLog(t *testing.T) {
	r, _ := newTestRoot(t)
	newSearchSession(t, r, "honest text")
	search(t, r, Query{Text: "honest"})
	path := searchIndexPath(r, "")
	data, _ := os.ReadFile(path)
	// A well-formed line whose text the log does not hold.
	var text []byte
	m := storetest.TextMessage(convo.RoleUser, "invented")
	line := appendSearchMessage(nil, newFolder(), &text, string(data[len(searchMagic)+2:len(searchMagic)+38]), 0, 0, &m)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(line)
	f.Close()
	if got := search(t, r, Query{Text: "invented"}); len(got.Hits) != 0 {
		t.Fatalf("a hit the log does not hold: %+v", got.Hits)
	}
}

func TestSearchSkipsDeletedSessions(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "doomed needle")
	search(t, r, Query{Text: "needle"})
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 0 {
		t.Fatalf("hits %v", hitIDs(got))
	}
}

func TestSearchFillsThePagePastStaleCandidates(t *testing.T) {
	r, _ := newTestRoot(t)
	var gone []*store.Session
	for range 12 {
		gone = append(gone, newSearchSession(t, r, "needle needle needle"))
	}
	keep := newSearchSession(t, r, "one needle")
	search(t, r, Query{Text: "needle"})
	for _, s := range gone {
		// Deleted by another process: this one's index still lists them.
		dir := s.Dir()
		s.Close()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	got := search(t, r, Query{Text: "needle", Limit: 1})
	if len(got.Hits) != 1 || got.Hits[0].SessionID != keep.ID() || got.NextCursor != "" {
		t.Fatalf("hits %v, next %q", hitIDs(got), got.NextCursor)
	}
}

// Two writers of one scope (two Roots: separate flock descriptions, as two
// processes) append to the index at once while a third searches: every
// committed message is found, and no line is torn.
func TestSearchIndexTakesAppendsOfConcurrentWriters(t *testing.T) {
	r, _ := newTestRoot(t)
	newSearchSession(t, r, "seed")
	search(t, r, Query{Text: "seed"})
	const rounds = 20
	var wg sync.WaitGroup
	for w := range 2 {
		rw := openRoot(t, r.Dir())
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := rw.Draft("", t.TempDir())
			var msgs []convo.Message
			for i := range rounds {
				msgs = append(msgs, storetest.TextMessage(convo.RoleUser, fmt.Sprintf("writer%d round%d marker", w, i)))
				if err := s.Commit(msgs, nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 5 {
		if _, err := r.Search(context.Background(), Query{Text: "marker", Scopes: []string{""}}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	got := search(t, r, Query{Text: "marker", Limit: MaxLimit})
	if len(got.Hits) != 2*rounds {
		t.Fatalf("%d hits, want %d", len(got.Hits), 2*rounds)
	}
	// A fresh process finds the index complete: nothing to catch up.
	data, _ := os.ReadFile(searchIndexPath(r, ""))
	r2 := openRoot(t, r.Dir())
	if got := search(t, r2, Query{Text: "marker", Limit: MaxLimit}); len(got.Hits) != 2*rounds {
		t.Fatalf("fresh process: %d hits", len(got.Hits))
	}
	if after, _ := os.ReadFile(searchIndexPath(r, "")); string(after) != string(data) {
		t.Fatalf("the index needed catching up:\n%s", after[len(data):])
	}
}

func TestSearchWithoutAWritableIndexReadsTheLogs(t *testing.T) {
	r, ffs := newTestRoot(t)
	newSearchSession(t, r, "readonly needle")
	// The index cannot be created: search still answers, from the logs.
	ffs.Arm(func(op, path string) *storetest.Fault {
		if op == "mkdir" && strings.Contains(path, searchDirName) {
			return &storetest.Fault{Err: syscall.EROFS}
		}
		return nil
	})
	got := search(t, r, Query{Text: "needle"})
	if len(got.Hits) != 1 || got.Hits[0].Snippet != "readonly needle" {
		t.Fatalf("hits %+v", got.Hits)
	}
	if _, err := os.Stat(filepath.Dir(searchIndexPath(r, ""))); !os.IsNotExist(err) {
		t.Fatalf("index directory: %v", err)
	}
}

// A panic in the index's append (a bug) is the store's to recover: the
// commit stands, and this process's next search still finds what the
// append lost.
func TestPanicInTheSearchIndexNeverFailsACommit(t *testing.T) {
	r, ffs := newTestRoot(t)
	s := newSearchSession(t, r, "hello")
	search(t, r, Query{Text: "hello"})
	ffs.Arm(func(op, path string) *storetest.Fault {
		if op == "write" && strings.HasSuffix(path, filepath.Join(searchDirName, searchIndexName)) {
			panic("index bug")
		}
		return nil
	})
	msgs := append(s.Messages(), storetest.TextMessage(convo.RoleAssistant, "late needle"))
	if err := s.Commit(msgs, nil, nil); err != nil {
		t.Fatalf("commit failed with its index: %v", err)
	}
	ffs.Arm(nil)
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 1 {
		t.Fatalf("hits %v", hitIDs(got))
	}
	o := openRoot(t, r.Dir())
	got, err := o.OpenDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if len(got.Messages()) != len(msgs) {
		t.Fatalf("committed %d messages, want %d", len(got.Messages()), len(msgs))
	}
}
