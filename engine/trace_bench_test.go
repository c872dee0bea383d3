package engine

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cannedOpenAI answers every request in process with one streamed answer
// of 100 text deltas, so that the benchmark measures Loop's own work.
type cannedOpenAI struct{ events []string }

func (c cannedOpenAI) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	req.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(&eventReader{events: c.events}), Request: req}, nil
}

// eventReader returns one event per read, as a stream from a real server
// arrives: its events are made one token at a time, each in its own
// packet.
type eventReader struct {
	events []string
	cur    string
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.cur == "" {
		if len(r.events) == 0 {
			return 0, io.EOF
		}
		r.cur, r.events = r.events[0], r.events[1:]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func cannedStream() []string {
	var out []string
	for i := range 100 {
		out = append(out, fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"}}]}\n\n", i))
	}
	out = append(out, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":100,\"total_tokens\":1000}}\n\n", "data: [DONE]\n\n")
	return out
}

// benchKey has the shape of an OpenAI project key (164 bytes).
var benchKey = "sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type tracingBench struct {
	root   string
	name   string
	ws     string
	e      *Engine
	cpu    time.Duration
	wall   time.Duration
	allocs uint64
	bytes  uint64
	n      int
	// sessions is the CPU per prompt of each session after its first, in
	// the order run; first the CPU of each session's first prompt.
	sessions []float64
	first    []float64
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// medianDiff is the median of a[i]-b[i]: sessions run side by side.
func medianDiff(a, b []float64) float64 {
	d := make([]float64, min(len(a), len(b)))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return median(d)
}

// traceBytes is the size of every trace the engine wrote.
func (t *tracingBench) traceBytes() int64 {
	var n int64
	_ = filepath.WalkDir(filepath.Join(t.root, "traces"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func mallocs() (n, bytes uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs, ms.TotalAlloc
}

func newTracingBench(b *testing.B, on bool, baseURL string) *tracingBench {
	root := b.TempDir()
	transport := http.RoundTripper(cannedOpenAI{cannedStream()})
	if baseURL == "" {
		baseURL = "http://bench.invalid/v1"
	} else {
		transport = &http.Transport{}
	}
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + baseURL + `","titles":false,"models":[{"id":"m"}]}},` +
		`"defaults":{"model":{"provider":"oa","id":"m"}},"traces":{"enabled":` + fmt.Sprint(on) + `}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	// A key in the environment, as in real use: every trace line is
	// scrubbed of it (docs/traces.md), and that search is part of the cost.
	getenv := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return benchKey
		}
		return ""
	}
	e, err := New(Options{DataRoot: root, HTTPClient: &http.Client{Transport: transport}, Getenv: getenv})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Shutdown(context.Background(), Abort) })
	ws, err := e.AddWorkspace(b.TempDir(), "")
	if err != nil {
		b.Fatal(err)
	}
	return &tracingBench{root: root, e: e, ws: ws.ID, name: map[bool]string{false: "off", true: "on"}[on]}
}

// session runs one session of 20 prompts and counts the process's CPU
// time they took, the trace's writes included. The first prompt is counted
// apart: its trace write makes the session's trace directory and first
// segment, a cost of the session, not of each prompt. The trace is flushed
// after it and at the end, as its timer would have done by then.
func (t *tracingBench) session(b *testing.B) {
	s, err := t.e.CreateSession(t.ws, SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	prompt := func() {
		if _, err := s.Prompt(PromptInput{RequestID: fmt.Sprint("r", t.n), Text: "please go on with the next step of the work"}); err != nil {
			b.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	flush := func() {
		if s.trace != nil {
			s.trace.Flush()
		}
	}
	start := cpuTime()
	prompt()
	flush()
	first := cpuTime() - start
	t.first = append(t.first, float64(first.Microseconds()))

	a0, b0 := mallocs()
	start, wall := cpuTime(), time.Now()
	for range promptsAfterFirst {
		prompt()
		t.n++
	}
	flush()
	spent := cpuTime() - start
	t.cpu += spent
	t.sessions = append(t.sessions, float64(spent.Microseconds())/promptsAfterFirst)
	t.wall += time.Since(wall)
	a1, b1 := mallocs()
	t.allocs += a1 - a0
	t.bytes += b1 - b0
}

const promptsAfterFirst = 19

// BenchmarkPromptTracing: the CPU one prompt costs the server with its
// trace on and off (a 100-delta answer over the real OpenAI client, an
// event a read, in sessions of 20 prompts, each committed; one op is one
// session of each engine). The per-prompt figures are of the prompts after
// a session's first; session-start-µs is what the trace adds to a
// session's first prompt (its directory and first segment made).
//
// The engines take turns, session by session, each going first as often
// as the others, so that load from elsewhere on the machine weighs on all
// alike. A second engine without traces ("control") measures the
// benchmark's own noise: noise-% is how far two engines that do the same
// work come out apart, the error bar of overhead-%. The fsyncs of a commit
// cost what the disk makes them cost at that moment, so the totals swing
// with it; the median-% figures compare each session with the one of the
// engine without traces run beside it (the median of those differences,
// over the median session), which what the disk does to all three
// cancels. docs/performance.md has the figures (target: tracing adds
// under 5 %).
func BenchmarkPromptTracing(b *testing.B) { benchmarkPromptTracing(b, "") }

// BenchmarkPromptTracingOverTCP: the same, with the model a fake OpenAI
// server in a process of its own on 127.0.0.1, sending an event every
// 200 µs, each in a write of its own, as a real provider's stream comes:
// what a prompt costs Loop in use, its reads from the socket included
// (the in-process transport above makes them free).
func BenchmarkPromptTracingOverTCP(b *testing.B) {
	benchmarkPromptTracing(b, startSSEServer(b, 200*time.Microsecond))
}

func benchmarkPromptTracing(b *testing.B, baseURL string) {
	off, on, control := newTracingBench(b, false, baseURL), newTracingBench(b, true, baseURL), newTracingBench(b, false, baseURL)
	control.name = "control"
	engines := []*tracingBench{off, on, control}
	for i := 0; b.Loop(); i++ {
		for k := range engines {
			t := engines[(i+k)%len(engines)]
			pprof.Do(context.Background(), pprof.Labels("engine", t.name), func(context.Context) { t.session(b) })
		}
	}
	perPrompt := func(t *tracingBench) float64 { return float64(t.cpu.Microseconds()) / float64(t.n) }
	offUS, onUS, controlUS := perPrompt(off), perPrompt(on), perPrompt(control)
	b.ReportMetric(offUS, "cpu-µs/prompt-off")
	b.ReportMetric(onUS, "cpu-µs/prompt-on")
	b.ReportMetric(100*(onUS-offUS)/offUS, "overhead-%")
	b.ReportMetric(100*(controlUS-offUS)/offUS, "noise-%")
	b.ReportMetric(100*medianDiff(on.sessions, off.sessions)/median(off.sessions), "overhead-median-%")
	b.ReportMetric(100*medianDiff(control.sessions, off.sessions)/median(off.sessions), "noise-median-%")
	// The same in µs: what tracing costs a prompt does not depend on what
	// the disk makes a commit cost, the share does.
	b.ReportMetric(medianDiff(on.sessions, off.sessions), "overhead-median-µs")
	b.ReportMetric(float64(off.wall.Microseconds())/float64(off.n), "wall-µs/prompt-off")
	b.ReportMetric(float64(on.wall.Microseconds())/float64(on.n), "wall-µs/prompt-on")
	b.ReportMetric(float64(off.allocs)/float64(off.n), "allocs/prompt-off")
	b.ReportMetric(float64(on.allocs)/float64(on.n), "allocs/prompt-on")
	b.ReportMetric(float64(off.bytes)/float64(off.n), "B/prompt-off")
	b.ReportMetric(float64(on.bytes)/float64(on.n), "B/prompt-on")
	b.ReportMetric(float64(on.traceBytes())/float64(on.n+len(on.first)), "trace-B/prompt")
	b.ReportMetric(medianDiff(on.first, off.first), "session-start-µs")
	b.ReportMetric(medianDiff(control.first, off.first), "session-start-noise-µs")
}
