package store

import (
	"github.com/loopdev/loop/store/internal/storetest"
	"os"
	"testing"
)

// The fork targets (docs/performance.md, "Forks"): a fork of a
// 10,000-message session writes under 4 KB and takes under 20 ms, and
// opening or continuing a fork costs within 1.2x of its parent.
//
//	go test -run '^$' -bench 'Fork' -benchmem ./store/

const benchForkMessages = 10000

// dirBytes is the size of the files directly in dir.
func dirBytes(b *testing.B, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n
}

func benchmarkFork(b *testing.B, at func(n int) int) {
	_, s, msgs := benchSession(b, benchForkMessages, true, nil)
	defer s.Close()
	k := at(len(msgs))
	var written int64
	b.ResetTimer()
	for range b.N {
		f, err := s.Fork(k, "")
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		written = dirBytes(b, f.Dir())
		f.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(written), "bytes-written/op")
}

// BenchmarkForkWholeHistory10000 forks the whole history (loop run --fork
// SESSION's default).
func BenchmarkForkWholeHistory10000(b *testing.B) {
	benchmarkFork(b, func(n int) int { return n })
}

// BenchmarkForkMidHistory10000 forks at a prompt in the middle: the
// checksum of that part is read from the log.
func BenchmarkForkMidHistory10000(b *testing.B) {
	benchmarkFork(b, func(n int) int { return n / 2 / 6 * 6 })
}

// benchmarkOpen opens a session of n messages (at < 0), or a fork of its
// first at messages.
func benchmarkOpen(b *testing.B, n, at int) {
	r, s, _ := benchSession(b, n, true, nil)
	id := s.ID()
	if at >= 0 {
		f, err := s.Fork(at, "")
		if err != nil {
			b.Fatal(err)
		}
		id = f.ID()
		f.Close()
	}
	s.Close()
	b.ResetTimer()
	for range b.N {
		o, err := r.Open("", id)
		if err != nil {
			b.Fatal(err)
		}
		o.Close()
	}
}

// BenchmarkOpenParent10000 and BenchmarkOpenFork10000 compare opening a
// session with opening a fork of its whole history.
func BenchmarkOpenParent10000(b *testing.B) { benchmarkOpen(b, benchForkMessages, -1) }
func BenchmarkOpenFork10000(b *testing.B) {
	benchmarkOpen(b, benchForkMessages, benchForkMessages)
}

// BenchmarkOpenParent6 and BenchmarkOpenForkAtFirstPrompt10000 compare
// opening a session of one prompt (6 messages, one timing) with opening a
// fork of a 10,000-message session's first prompt (a rewind to the start,
// then its undo): the fork reads its part of the parent, not the parent's
// whole history (store/forkpart.go).
func BenchmarkOpenParent6(b *testing.B) { benchmarkOpen(b, 6, -1) }
func BenchmarkOpenForkAtFirstPrompt10000(b *testing.B) {
	benchmarkOpen(b, benchForkMessages, 6)
}

func benchmarkContinue(b *testing.B, fork bool) {
	r, s, msgs := benchSession(b, benchForkMessages, true, nil)
	if fork {
		f, err := s.Fork(len(msgs), "")
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		if s, err = r.Open("", f.ID()); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	defer s.Close()
	all := msgs
	b.ResetTimer()
	for i := range b.N {
		all = append(all, storetest.BenchPrompt(100000+i)...)
		if err := s.Commit(all, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContinueParent10000 and BenchmarkContinueFork10000 compare a
// prompt's commit to a long session with one to a fork of its whole
// history.
func BenchmarkContinueParent10000(b *testing.B) { benchmarkContinue(b, false) }
func BenchmarkContinueFork10000(b *testing.B)   { benchmarkContinue(b, true) }
