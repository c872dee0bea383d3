package trace

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// BenchmarkTraceCall: what one model call costs its trace: the call, a
// request body of 30 KB and more (sessions of 20 calls, each adding a
// 300-byte message to the history before the tools), the status, 100
// streamed events, one a read, the result, written to disk, with no key to
// scrub and with two (docs/performance.md compares it with a prompt's CPU).
func BenchmarkTraceCall(b *testing.B) {
	keys := []string{"sk-bench-secret-1", "sk-bench-secret-2"}
	for _, n := range []int{0, 2} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) { benchmarkTraceCall(b, keys[:n], nil, 1) })
	}
}

// BenchmarkTraceCallInMemory: BenchmarkTraceCall's calls with a real key
// to scrub and the disk left out (discardFS), flushed every 20 calls as a
// session's second would be.
func BenchmarkTraceCallInMemory(b *testing.B) {
	benchmarkTraceCall(b, []string{"sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13)}, discardFS{}, 20)
}

// benchmarkTraceCall records calls to a writer on fs (nil: the disk) and
// flushes it every flushEvery calls. keys are one redact.Set, built once,
// as the engine's catalog holds it.
func benchmarkTraceCall(b *testing.B, keys []string, fs FS, flushEvery int) {
	secrets := redact.New(keys...)
	w := NewWriter(Options{Dir: filepath.Join(b.TempDir(), "t"), FS: fs, Secrets: func() *redact.Set { return secrets }})
	defer w.Close()
	var bodies [][]byte
	history := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("history ", 3750) + `"}`
	for range 20 {
		history += `,{"role":"user","content":"` + strings.Repeat("more ", 56) + `"}`
		bodies = append(bodies, []byte(history+`],"tools":[{"type":"function","function":{"name":"read"}}],"stream":true}`))
	}
	var events [][]byte
	for i := range 100 {
		events = append(events, fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"}}]}\n\n", i))
	}
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Authorization": {"Bearer x"}}
	b.SetBytes(int64(len(bodies[10])))
	for i := 0; b.Loop(); i++ {
		c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m", RunID: "0190e7e4-0000-7000-8000-000000000000", RequestID: "r1"})
		c.Request(1, "https://api.example.com/v1/chat/completions", h, provider.BodyOf(bodies[i%len(bodies)]))
		c.Response(1, 200)
		for _, ev := range events {
			c.Body(1, ev)
		}
		c.End(1, nil)
		c.Finish(Record{StopReason: "stop", Usage: &Usage{Input: 900, Output: 100, TotalTokens: 1000}})
		if i%flushEvery == flushEvery-1 {
			w.Flush()
		}
	}
}
