package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// Benchmarks (docs/performance.md has the figures):
//
//	go test -run '^$' -bench . -benchmem ./store/
//
// Their fixtures are built on first use only, so plain `go test` stays fast.

// benchHistory returns n messages made of storetest.BenchPrompts, and one prompt
// timing per prompt.
func benchHistory(n int) ([]convo.Message, []PromptTiming) {
	var msgs []convo.Message
	var timings []PromptTiming
	for i := 0; len(msgs) < n; i++ {
		start, end, fin := len(msgs), len(msgs)+6, int64(1795972384000+i*10000+9000)
		timings = append(timings, PromptTiming{ID: newID(), UserMessageIndex: start, MessageStartIndex: Some(start), MessageEndIndex: Some(end), StartedAt: int64(1795972384000 + i*10000), FinishedAt: Some(fin)})
		msgs = append(msgs, storetest.BenchPrompt(i)...)
	}
	return msgs[:n], timings
}

// benchSession creates a session in a fresh root and commits the first n
// messages of benchHistory to it, with their prompt timings when timed;
// edit is Commit's. The caller closes the session.
func benchSession(b *testing.B, n int, timed bool, edit func(*Header)) (*Root, *Session, []convo.Message) {
	dir := benchDir(b)
	r, _ := OpenRoot(filepath.Join(dir, "data"))
	s, err := r.Create("", dir)
	if err != nil {
		b.Fatal(err)
	}
	msgs, timings := benchHistory(n)
	if !timed {
		timings = nil
	}
	if err := s.Commit(msgs, nil, edit, indexed(timings)...); err != nil {
		s.Close()
		b.Fatal(err)
	}
	return r, s, msgs
}

// Bench fixtures are shared by the benchmark runs of one process; their
// directories are removed by TestMain.
var benchFixtures struct {
	sync.Mutex
	list    *Root
	wsID    string
	timings map[int]*Root // listTimingsFixture by number of timings
}

var benchDirs storetest.TempDirs

func benchDir(b *testing.B) string { return benchDirs.New(b, "loop-store-bench-") }

// benchBatch encodes msgs and timings as one commit would.
func benchBatch(b *testing.B, msgs []convo.Message, timings []PromptTiming) encodedBatch {
	batch, err := encodeBatch(msgs, 0, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	if batch.timings, err = encodeTimings(indexed(timings)); err != nil {
		b.Fatal(err)
	}
	return batch
}

// writeBenchSession writes the files of session h holding batch into
// scope, the bytes Commit writes but without fsync.
func writeBenchSession(b *testing.B, scope string, h *Header, batch encodedBatch) {
	data, err := encodeHeader(h, nil)
	if err != nil {
		b.Fatal(err)
	}
	sd := filepath.Join(scope, h.ID)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		b.Fatal(err)
	}
	for name, content := range map[string][]byte{headerFile: data, messagesFile: batch.lines, indexFile: batch.index, runtimeFile: nil, timingsFile: batch.timings} {
		if err := os.WriteFile(filepath.Join(sd, name), content, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// listFixture writes 10,000 sessions of 50 messages each into one workspace.
// The files are produced by the store's own encoders (the same bytes
// Commit writes) but without fsync, which would take minutes.
func listFixture(b *testing.B) (*Root, string) {
	benchFixtures.Lock()
	defer benchFixtures.Unlock()
	if benchFixtures.list != nil {
		return benchFixtures.list, benchFixtures.wsID
	}
	dir := benchDir(b)
	r, _ := OpenRoot(filepath.Join(dir, "data"))
	ws, err := r.AddWorkspace(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	scope, _ := r.scopeDir(ws.ID)
	msgs, timings := benchHistory(50)
	batch := benchBatch(b, msgs, timings)
	for i := range 10000 {
		h := newHeader(newID(), ws.ID, dir, int64(1795972384000+i))
		setRange(&h, batch, len(msgs), 0, len(timings), &Header{})
		h.UpdatedAt = int64(1795972384000 + (i*7919)%10000)
		h.Title = fmt.Sprintf("Session %d: fix the failing test", i)
		h.TitleSource = TitleAuto
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude-sonnet"}
		h.Unread = i%3 == 0
		writeBenchSession(b, scope, &h, batch)
	}
	benchFixtures.list, benchFixtures.wsID = r, ws.ID
	return r, ws.ID
}

// BenchmarkList10000: list a workspace of 10,000 sessions of 50 messages
// (warm page cache). Target: under 150 ms.
func BenchmarkList10000(b *testing.B) {
	r, ws := listFixture(b)
	b.ResetTimer()
	for b.Loop() {
		sums, err := r.List(ws, ListOptions{})
		if err != nil || len(sums) != 10000 {
			b.Fatalf("%d summaries, %v", len(sums), err)
		}
	}
}

// listTimingsFixture writes 2,000 sessions whose headers hold the given
// number of prompt timings (as headers did before timings.jsonl) into the
// independent collection.
func listTimingsFixture(b *testing.B, timings int) *Root {
	benchFixtures.Lock()
	defer benchFixtures.Unlock()
	if r := benchFixtures.timings[timings]; r != nil {
		return r
	}
	dir := benchDir(b)
	r, _ := OpenRoot(filepath.Join(dir, "data"))
	scope, _ := r.scopeDir("")
	msgs := history(1)
	batch, err := encodeBatch(msgs, 0, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		h := newHeader(newID(), "", dir, int64(1795972384000+i))
		setRange(&h, batch, len(msgs), 0, 0, &Header{})
		var legacy []PromptTiming
		for k := range timings {
			legacy = append(legacy, PromptTiming{ID: fmt.Sprintf("t%d", k), MessageStartIndex: Some(0), MessageEndIndex: Some(len(msgs)), StartedAt: int64(k), FinishedAt: Some(int64(k + 1000))})
		}
		data, err := encodeHeader(&h, legacy)
		if err != nil {
			b.Fatal(err)
		}
		sd := filepath.Join(scope, h.ID)
		if err := os.MkdirAll(sd, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sd, headerFile), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if benchFixtures.timings == nil {
		benchFixtures.timings = map[int]*Root{}
	}
	benchFixtures.timings[timings] = r
	return r
}

// BenchmarkListTimings: list 2,000 sessions whose headers hold 0, 100 or
// 1,000 prompt timings (headers of about 0.4, 8 and 80 KB, as written
// before timings.jsonl; current headers hold none). List decodes only the
// part before the timings, so the three should cost about the same.
func BenchmarkListTimings(b *testing.B) {
	for _, n := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("timings=%d", n), func(b *testing.B) {
			r := listTimingsFixture(b, n)
			b.ResetTimer()
			for b.Loop() {
				sums, err := r.List("", ListOptions{})
				if err != nil || len(sums) != 2000 {
					b.Fatalf("%d summaries, %v", len(sums), err)
				}
			}
		})
	}
}

// BenchmarkCommitPrompt: commit one 6-message prompt (and its timing) onto
// histories of 10 and 10,000 messages (2 and 1,667 timings), the scope's
// summary index maintained. A commit costs what is new: the two should be
// within 2x, in time and in bytes written (written-B/op: every byte the
// commit writes, logs and header; header-B: the size of header.json at the
// end).
func BenchmarkCommitPrompt(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			dir := benchDir(b)
			r, _ := OpenRoot(filepath.Join(dir, "data"))
			cfs := &countingFS{FS: fsys.OS{}}
			r.fs = cfs
			s, err := r.Create("", dir)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			msgs, timings := benchHistory(n)
			if err := s.Commit(msgs, nil, nil, indexed(timings)...); err != nil {
				b.Fatal(err)
			}
			// With the scope's summary index, which each commit maintains.
			if _, err := r.ListPage("", PageOptions{Limit: 1}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cfs.written.Store(0)
			i := 0
			for b.Loop() {
				start := len(msgs)
				msgs = append(msgs, storetest.BenchPrompt(n+i)...)
				t := PromptTiming{ID: newID(), UserMessageIndex: start, MessageStartIndex: Some(start), MessageEndIndex: Some(len(msgs)), StartedAt: 1, FinishedAt: Some(int64(9))}
				err := s.Commit(msgs, nil, func(h *Header) { h.Unread = true }, TimingAt{Index: len(timings) + i, Timing: t})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(cfs.written.Load())/float64(b.N), "written-B/op")
			fi, err := os.Stat(filepath.Join(s.Dir(), headerFile))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "header-B")
		})
	}
}

// BenchmarkHeader: Session.Header of a session of 10,000 messages and
// 1,667 prompt timings, the read the engine makes for one field at a time.
func BenchmarkHeader(b *testing.B) {
	_, s, _ := benchSession(b, 10000, true, func(h *Header) {
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude-sonnet"}
	})
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if h := s.Header(); h.MessageCount != 10000 {
			b.Fatal(h.MessageCount)
		}
	}
}

// BenchmarkOpen10000: open (validate, checksum and decode) a session of
// 10,000 messages. Target: under 100 ms.
func BenchmarkOpen10000(b *testing.B) {
	r, s, _ := benchSession(b, 10000, true, nil)
	s.Close()
	b.SetBytes(s.Header().MessagesBytes)
	b.ResetTimer()
	for b.Loop() {
		o, err := r.Open("", s.ID())
		if err != nil || len(o.Messages()) != 10000 {
			b.Fatal(err)
		}
		o.Close()
	}
}

// BenchmarkSaveMeta: a metadata-only save (pin toggle) of a session with
// 10,000 messages: one header rewrite.
func BenchmarkSaveMeta(b *testing.B) {
	r, s, _ := benchSession(b, 10000, true, nil)
	defer s.Close()
	if _, err := r.ListPage("", PageOptions{Limit: 1}); err != nil { // the summary index
		b.Fatal(err)
	}
	b.ResetTimer()
	pinned := false
	for b.Loop() {
		pinned = !pinned
		if _, err := s.SetPinned(pinned); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListFirstPage: the first 50 of the 10,000 sessions of
// BenchmarkList10000 through the summary index (ListPage), once the index
// exists. Target: under 20 ms.
func BenchmarkListFirstPage(b *testing.B) {
	r, ws := listFixture(b)
	opt := PageOptions{Limit: 50}
	if _, err := r.ListPage(ws, opt); err != nil { // builds the index
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		sums, err := r.ListPage(ws, opt)
		if err != nil || len(sums) != 50 {
			b.Fatalf("%d summaries, %v", len(sums), err)
		}
	}
}

// BenchmarkCommitPromptIndex: what keeping the summary index adds to a
// commit that moves the session (an announcing record, fsynced while the
// logs are, and an exact one after the publish): the same commit as
// BenchmarkCommitPrompt/history=10 in a scope without an index and in one
// with it, side by side so that both see the same load.
func BenchmarkCommitPromptIndex(b *testing.B) {
	for _, kept := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", kept), func(b *testing.B) {
			r, s, msgs := benchSession(b, 10, false, nil)
			defer s.Close()
			if kept {
				if _, err := r.ListPage("", PageOptions{Limit: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			i := 0
			for b.Loop() {
				msgs = append(msgs, storetest.BenchPrompt(10+i)...)
				// A later updatedAt each time: the session moves.
				err := s.Commit(msgs, nil, func(h *Header) { h.UpdatedAt = int64(1795972384000 + i) })
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkMostRecent10000: the most recently active unarchived session
// of the 10,000 of BenchmarkList10000 (what `--continue` opens), once the
// summary index exists.
func BenchmarkMostRecent10000(b *testing.B) {
	r, ws := listFixture(b)
	if _, err := r.ListPage(ws, PageOptions{Limit: 1}); err != nil { // builds the index
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, found, err := r.MostRecent(ws); err != nil || !found {
			b.Fatalf("found %v, %v", found, err)
		}
	}
}

// BenchmarkRecoveryFiles10000: look for a session's recovery files in a
// scope of 10,000 sessions (one readdir), what an engine does once when it
// opens a session from disk, never per snapshot (docs/storage.md,
// "Recovery files"). Target: well below the open itself
// (BenchmarkOpen10000).
func BenchmarkRecoveryFiles10000(b *testing.B) {
	r, ws := listFixture(b)
	id := newID()
	b.ResetTimer()
	for b.Loop() {
		files, err := r.RecoveryFiles(ws, id)
		if err != nil || len(files) != 0 {
			b.Fatalf("%v, %v", files, err)
		}
	}
}
