package trace

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// discardFS makes the directories but takes every write and keeps
// nothing: what a record costs in memory, without the disk.
type discardFS struct{ osFS }

func (discardFS) OpenFile(string, int, os.FileMode) (io.WriteCloser, error) {
	return nopWriteCloser{}, nil
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// BenchmarkTraceCallInMemory: BenchmarkTraceCall's call, the disk left out.
func BenchmarkTraceCallInMemory(b *testing.B) {
	dir := b.TempDir()
	// One slice, as the engine's catalog holds it: the scrubber is built
	// once for it.
	secrets := []string{"sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13)}
	w := NewWriter(Options{Dir: filepath.Join(dir, "t"), FS: discardFS{}, Secrets: func() []string { return secrets }})
	defer w.Close()
	var bodies [][]byte
	history := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("history ", 1750) + `"}`
	for range 20 {
		history += `,{"role":"user","content":"` + strings.Repeat("more ", 56) + `"}`
		bodies = append(bodies, []byte(history+`],"tools":[{"type":"function","function":{"name":"read"}}],"stream":true}`))
	}
	var events [][]byte
	for i := range 100 {
		events = append(events, fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"}}]}\n\n", i))
	}
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Authorization": {"Bearer x"}}
	for i := 0; b.Loop(); i++ {
		c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m", RunID: "0190e7e4-0000-7000-8000-000000000000", RequestID: "r1"})
		c.Request(1, "http://bench.invalid/v1/chat/completions", h, bodies[i%len(bodies)])
		c.Response(1, 200)
		for _, ev := range events {
			c.Body(1, ev)
		}
		c.End(1, nil)
		c.Finish(Record{StopReason: "stop", Usage: &Usage{Input: 900, Output: 100, TotalTokens: 1000}})
		if i%20 == 19 {
			w.Flush()
		}
	}
}

// BenchmarkStreamRead: what one read of a stream costs its trace, the
// record of its event included (made once per call, as at its end).
func BenchmarkStreamRead(b *testing.B) {
	secrets := []string{"sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13)}
	w := NewWriter(Options{Dir: filepath.Join(b.TempDir(), "t"), FS: discardFS{}, Secrets: func() []string { return secrets }})
	defer w.Close()
	ev := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word12 \"}}]}\n\n")
	c := w.StartCall(Record{Purpose: PurposeMain})
	for i := 0; b.Loop(); i++ {
		c.Body(1, ev)
		if i%100 == 99 {
			c.Finish(Record{})
			c = w.StartCall(Record{Purpose: PurposeMain})
		}
	}
}
