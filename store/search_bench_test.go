package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/loopdev/loop/convo"
)

// searchFixture: 10,000 sessions of 50 messages (benchPrompt's), where
// every 100th session's first prompt also says "kumquat". The files are
// written as listFixture writes them; the search index is then built once.
var searchFixtureRoot struct {
	r  *Root
	ws string
}

func searchFixture(b *testing.B) (*Root, string) {
	benchFixtures.Lock()
	defer benchFixtures.Unlock()
	if searchFixtureRoot.r != nil {
		return searchFixtureRoot.r, searchFixtureRoot.ws
	}
	dir := benchDir(b)
	r, _ := OpenRoot(filepath.Join(dir, "data"))
	ws, err := r.AddWorkspace(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	scope, _ := r.scopeDir(ws.ID)
	msgs, timings := benchHistory(50)
	planted := append([]convo.Message(nil), msgs...)
	planted[0].Content = []convo.Block{{Type: convo.BlockText, Text: planted[0].Content[0].Text + " and a kumquat"}}
	batches := [2]encodedBatch{benchBatch(b, msgs, timings), benchBatch(b, planted, timings)}
	for i := range 10000 {
		batch := batches[0]
		if i%100 == 0 {
			batch = batches[1]
		}
		h := newHeader(newID(), ws.ID, dir, int64(1795972384000+i))
		setRange(&h, batch, len(msgs), 0, len(timings), &Header{})
		h.UpdatedAt = int64(1795972384000 + (i*7919)%10000)
		h.Title = fmt.Sprintf("Session %d: fix the failing test", i)
		writeBenchSession(b, scope, &h, batch)
	}
	if err := r.rebuildSearch(context.Background(), scope, ws.ID); err != nil {
		b.Fatal(err)
	}
	searchFixtureRoot.r, searchFixtureRoot.ws = r, ws.ID
	return r, ws.ID
}

var benchQueries = []struct{ name, text string }{
	{"rare", "kumquat"},     // 100 sessions, 100 messages
	{"common", `"fix the"`}, // every user message: 90,000 candidates
}

// BenchmarkSearch10000: the first page (20 hits) of a warm search: the
// index was checked against the headers by an earlier search of this Root.
func BenchmarkSearch10000(b *testing.B) {
	r, ws := searchFixture(b)
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			query := SearchQuery{Text: q.text, Scopes: []string{ws}}
			if _, err := r.Search(context.Background(), query); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				res, err := r.Search(context.Background(), query)
				if err != nil || len(res.Hits) != 20 {
					b.Fatalf("%d hits, %v", len(res.Hits), err)
				}
			}
		})
	}
}

// BenchmarkSearchCold10000: the first search of a fresh Root (a new
// process): it reads the index and checks it against every header. With
// LOOP_BENCH_DROP_CACHES=1 (as root) the page cache is dropped before each
// search, so the files come from the disk.
func BenchmarkSearchCold10000(b *testing.B) {
	r0, ws := searchFixture(b)
	drop := os.Getenv("LOOP_BENCH_DROP_CACHES") == "1"
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if drop {
					b.StopTimer()
					syscall.Sync()
					if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				r, _ := OpenRoot(r0.Dir())
				res, err := r.Search(context.Background(), SearchQuery{Text: q.text, Scopes: []string{ws}})
				if err != nil || len(res.Hits) != 20 {
					b.Fatalf("%d hits, %v", len(res.Hits), err)
				}
			}
		})
	}
}

// BenchmarkSearchRebuild10000: build the index of 10,000 sessions from
// their logs (what a search does when the index is missing or corrupt).
func BenchmarkSearchRebuild10000(b *testing.B) {
	r, ws := searchFixture(b)
	scope, _ := r.scopeDir(ws)
	for b.Loop() {
		if err := r.rebuildSearch(context.Background(), scope, ws); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchScan10000 is the alternative the index was measured
// against: no index, every header and every committed message read,
// decoded and folded on each search.
func BenchmarkSearchScan10000(b *testing.B) {
	r, ws := searchFixture(b)
	term := []byte("kumquat")
	for b.Loop() {
		heads, err := r.scan(ws)
		if err != nil {
			b.Fatal(err)
		}
		f := newFolder()
		hits := 0
		var text []byte
		for i := range heads {
			msgs, err := r.ReadMessages(ws, heads[i].ID, 0, heads[i].MessageCount)
			if err != nil {
				b.Fatal(err)
			}
			for j := range msgs {
				if msgs[j].Role == convo.RoleToolResult {
					continue
				}
				text = f.fold(text[:0], messageSearchText(&msgs[j]), maxIndexedText)
				if bytes.Contains(text, term) {
					hits++
				}
			}
		}
		if hits != 100 {
			b.Fatalf("%d hits", hits)
		}
	}
}

// BenchmarkCommitSearchIndex: commit one benchPrompt (6 messages) onto a
// 10-message history, in a scope without a search index and in one with
// it (the commit then appends the prompt's folded text).
func BenchmarkCommitSearchIndex(b *testing.B) {
	for _, withIndex := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", withIndex), func(b *testing.B) {
			r, s, msgs := benchSession(b, 10, false, nil)
			defer s.Close()
			if withIndex {
				if _, err := r.Search(context.Background(), SearchQuery{Text: "x", Scopes: []string{""}}); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				msgs = append(msgs, benchPrompt(10+i)...)
				if err := s.Commit(msgs, nil, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
