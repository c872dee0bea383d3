package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Small notifications through jsonrpc2.Conn.Notify to a fast reader.
func BenchmarkWriteNotification(b *testing.B) {
	inR, _ := io.Pipe()
	s := New(inR, io.Discard, Options{Framing: NDJSON})
	conn := quietConn(s, nil)
	defer conn.Close()
	ctx := context.Background()
	params := map[string]any{"sessionId": "0193b7c4-1111-7000-8000-000000000000", "event": "state", "seq": 1}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := conn.Notify(ctx, "session/state", params); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ReportMetric(float64(s.Stats().Written)/float64(b.N), "written/op")
}

// A 100,000-delta burst (one block of a streaming reply) through the
// outbox to a reader on the other end of a pipe. Reports how many frames
// reached the reader; merging keeps that far below 100,000 when the reader
// lags, and the bytes it gets stay exact (TestOutboxNeverBlocksAndMerges).
func BenchmarkDeltaBurst(b *testing.B) {
	const deltas = 100_000
	ctx := context.Background()
	var frames, merged uint64
	b.ReportAllocs()
	for b.Loop() {
		inR, _ := io.Pipe()
		outR, outW := io.Pipe()
		s := New(inR, outW, Options{Framing: NDJSON, Merger: mergeDeltas})
		conn := quietConn(s, nil)
		done := make(chan int)
		go func() {
			n := 0
			br := bufio.NewReader(outR)
			for {
				if _, err := br.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
					break
				}
				n++
			}
			done <- n
		}()
		p := deltaParams{"0193b7c4-1111-7000-8000-000000000000", "0193b7c4-2222-7000-8000-000000000000", "delta", 0, "text", ""}
		for i := range deltas {
			p.Delta = words[i%len(words)]
			if err := conn.Notify(ctx, deltaMethod, p); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
		frames += uint64(<-done)
		merged += s.Stats().Merged
		conn.Close()
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/burst")
	b.ReportMetric(float64(merged)/float64(b.N), "merged/burst")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/deltas, "ns/delta")
}

var words = strings.Fields("the quick brown fox jumps over the lazy dog while a model streams tokens one by one")

// BenchmarkFramingCostPerByte frames the inputs that were once quadratic
// (costlyInputs) at 1,000, 10,000 and 100,000 repeats: ns/byte and
// work/byte stay flat as the input grows (docs/performance.md).
func BenchmarkFramingCostPerByte(b *testing.B) {
	for _, c := range costlyInputs {
		for _, n := range []int{1_000, 10_000, 100_000} {
			in := c.input(n)
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				var work int64
				for b.Loop() {
					w, sawTail := frameAll(b, in, c.framing)
					if !sawTail {
						b.Fatal("the request after the input never came through")
					}
					work = w
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in)), "ns/byte")
				// Bytes read, scanned and decoded per input byte: what the
				// time is made of, without the noise of a shared machine.
				b.ReportMetric(float64(work)/float64(len(in)), "work/byte")
			})
		}
	}
}
