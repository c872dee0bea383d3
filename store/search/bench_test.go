package search

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/storetest"
)

// Benchmarks (docs/performance.md has the figures):
//
//	go test -run '^$' -bench . -benchmem ./store/search/
//
// Their fixture is built on first use only, so plain `go test` stays fast,
// and removed by TestMain.

// benchHistory returns n messages made of storetest.BenchPrompts.
func benchHistory(n int) []convo.Message {
	var msgs []convo.Message
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, storetest.BenchPrompt(i)...)
	}
	return msgs[:n]
}

// benchFixtures guards the fixture shared by the benchmark runs of one
// process; its directories are removed by TestMain.
var benchFixtures sync.Mutex

var benchDirs storetest.TempDirs

func TestMain(m *testing.M) {
	code := m.Run()
	benchDirs.RemoveAll()
	os.Exit(code)
}

func benchDir(b *testing.B) string { return benchDirs.New(b, "loop-search-bench-") }

func openBenchRoot(b *testing.B, dir string) *testRoot {
	r, err := store.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	return &testRoot{Root: r, ix: New(r)}
}

// benchSession creates a session in a fresh root with its search index and
// commits the first n messages of benchHistory to it. The caller closes
// the session.
func benchSession(b *testing.B, n int) (*testRoot, *store.Session, []convo.Message) {
	dir := benchDir(b)
	r := openBenchRoot(b, filepath.Join(dir, "data"))
	s, err := r.Create("", dir)
	if err != nil {
		b.Fatal(err)
	}
	msgs := benchHistory(n)
	if err := s.Commit(msgs, nil, nil); err != nil {
		s.Close()
		b.Fatal(err)
	}
	return r, s, msgs
}

// searchFixture: 10,000 sessions of 50 messages (storetest.BenchPrompt's), where
// every 100th session's first prompt also says "kumquat", each with its own
// updatedAt and title. Two sessions are committed through the store; the
// others are copies of their files under new ids (the bytes Commit writes,
// without its fsyncs, which would take minutes). The search index is then
// built once.
var searchFixtureRoot struct {
	r  *testRoot
	ws string
}

var (
	headerID      = regexp.MustCompile(`"id":"[0-9a-f-]{36}"`)
	headerCreated = regexp.MustCompile(`"createdAt":[0-9]+`)
	headerUpdated = regexp.MustCompile(`"updatedAt":[0-9]+`)
	headerTitle   = regexp.MustCompile(`"title":"[^"]*"`)
)

func searchFixture(b *testing.B) (*testRoot, string) {
	benchFixtures.Lock()
	defer benchFixtures.Unlock()
	if searchFixtureRoot.r != nil {
		return searchFixtureRoot.r, searchFixtureRoot.ws
	}
	dir := benchDir(b)
	data := filepath.Join(dir, "data")
	setup, err := store.OpenRoot(data)
	if err != nil {
		b.Fatal(err)
	}
	ws, err := setup.AddWorkspace(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	scope, _ := setup.ScopeDir(ws.ID)
	msgs := benchHistory(50)
	planted := append([]convo.Message(nil), msgs...)
	planted[0].Content = []convo.Block{{Type: convo.BlockText, Text: planted[0].Content[0].Text + " and a kumquat"}}
	var templates [2]map[string][]byte
	for k, history := range [][]convo.Message{msgs, planted} {
		s := setup.Draft(ws.ID, dir)
		if err := s.Commit(history, nil, nil); err != nil {
			b.Fatal(err)
		}
		sd := s.Dir()
		s.Close()
		templates[k] = map[string][]byte{}
		for _, name := range []string{"header.json", "messages.jsonl", "index.bin", "runtime.jsonl", "timings.jsonl"} {
			if templates[k][name], err = os.ReadFile(filepath.Join(sd, name)); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.RemoveAll(sd); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10000 {
		tmpl := templates[0]
		if i%100 == 0 {
			tmpl = templates[1]
		}
		id := uuid.Must(uuid.NewV7()).String()
		h := tmpl["header.json"]
		h = headerID.ReplaceAll(h, []byte(`"id":"`+id+`"`))
		h = headerCreated.ReplaceAll(h, []byte(fmt.Sprintf(`"createdAt":%d`, 1795972384000+i)))
		if headerTitle.Match(h) {
			b.Fatal("the template has a title")
		}
		h = headerUpdated.ReplaceAll(h, []byte(fmt.Sprintf(`"updatedAt":%d,"title":"Session %d: fix the failing test"`, 1795972384000+(i*7919)%10000, i)))
		sd := filepath.Join(scope, id)
		if err := os.MkdirAll(sd, 0o700); err != nil {
			b.Fatal(err)
		}
		for name, content := range tmpl {
			if name == "header.json" {
				content = h
			}
			if err := os.WriteFile(filepath.Join(sd, name), content, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	r := openBenchRoot(b, data)
	if err := r.ix.rebuildSearch(context.Background(), scope, ws.ID); err != nil {
		b.Fatal(err)
	}
	if heads, err := r.Headers(ws.ID); err != nil || len(heads) != 10000 {
		b.Fatalf("fixture: %d sessions, %v", len(heads), err)
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
			query := Query{Text: q.text, Scopes: []string{ws}}
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
				r := openBenchRoot(b, r0.Dir())
				res, err := r.Search(context.Background(), Query{Text: q.text, Scopes: []string{ws}})
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
	scope, _ := r.ScopeDir(ws)
	for b.Loop() {
		if err := r.ix.rebuildSearch(context.Background(), scope, ws); err != nil {
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
		heads, err := r.Headers(ws)
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

// BenchmarkCommitSearchIndex: commit one storetest.BenchPrompt (6 messages) onto a
// 10-message history, in a scope without a search index and in one with
// it (the commit then appends the prompt's folded text).
func BenchmarkCommitSearchIndex(b *testing.B) {
	for _, withIndex := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", withIndex), func(b *testing.B) {
			r, s, msgs := benchSession(b, 10)
			defer s.Close()
			if withIndex {
				if _, err := r.Search(context.Background(), Query{Text: "x", Scopes: []string{""}}); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				msgs = append(msgs, storetest.BenchPrompt(10+i)...)
				if err := s.Commit(msgs, nil, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkForkWholeHistory10000WithSearchIndex is the store's
// BenchmarkForkWholeHistory10000 with the search index wired, as the
// engine always has it (docs/performance.md, "Forks"): a fork writes under
// 4 KB, its files and what it appends to the index together.
//
//	go test -run '^$' -bench 'ForkWholeHistory10000WithSearchIndex' -benchmem ./store/search/
func BenchmarkForkWholeHistory10000WithSearchIndex(b *testing.B) {
	r, s, msgs := benchSession(b, 10000)
	defer s.Close()
	// The index exists once a search built it; forks then append to it.
	if _, err := r.Search(context.Background(), Query{Text: "kumquat", Scopes: []string{""}}); err != nil {
		b.Fatal(err)
	}
	scopeDir, err := r.ScopeDir("")
	if err != nil {
		b.Fatal(err)
	}
	index := filepath.Join(scopeDir, searchDirName, searchIndexName)
	tools := filepath.Join(scopeDir, searchDirName, searchToolsName)
	size := func() int64 {
		var n int64
		for _, p := range []string{index, tools} {
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			n += fi.Size()
		}
		return n
	}
	var files, appended int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := size()
		b.StartTimer()
		f, err := s.Fork(len(msgs), "")
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		appended = size() - before
		files = 0
		entries, err := os.ReadDir(f.Dir())
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && !fi.IsDir() {
				files += fi.Size()
			}
		}
		f.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(files+appended), "bytes-written/op")
	b.ReportMetric(float64(appended), "index-bytes/op")
}
