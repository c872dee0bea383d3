package store

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSaveQueue measures one write of queue.json (encode, write,
// fsync, rename, fsync the directory: docs/performance.md, "Queued inputs
// and request ids"): the state after one prompt of a new session, the
// largest dedup cache with ten short queued inputs, and one queued input
// of 1 MiB. The directory is $TMPDIR's: run it on tmpfs and on the disk.
func BenchmarkSaveQueue(b *testing.B) {
	digest := strings.Repeat("ab", 32)
	requests := func(n int) []AcceptedRequest {
		out := make([]AcceptedRequest, n)
		for i := range out {
			out[i] = AcceptedRequest{ID: fmt.Sprintf("req-%d", i), Digest: digest, RunID: "01a23499-368d-768b-816a-7fe2050da0fd", Queued: true}
		}
		return out
	}
	item := func(i int, text string) QueuedInput {
		return QueuedInput{ID: fmt.Sprintf("req-%d", i), RunID: "01a23499-368d-768b-816a-7fe2050da0fd", Text: text, QueuedAt: 1795972386000}
	}
	cases := []struct {
		name string
		q    QueueState
	}{
		{"ids=1/queued=0", QueueState{Requests: requests(1)}},
		{"ids=256/queued=10", QueueState{Requests: requests(256), Items: func() []QueuedInput {
			var its []QueuedInput
			for i := range 10 {
				its = append(its, item(i, "Rename the helper and update its callers."))
			}
			return its
		}()}},
		{"ids=1/queued=1MiB", QueueState{Requests: requests(1), Items: []QueuedInput{item(0, strings.Repeat("line of a pasted log\n", 1<<20/21))}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r, err := OpenRoot(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s, err := r.Create("", b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := s.SaveQueue(&c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
