package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
)

// BenchmarkEnginePrompt measures what one prompt with a short answer costs
// the engine in a session that already holds history messages (of about
// 200 bytes each, alternating user and assistant, persisted on disk), with
// the scripted model in process: its CPU (user and system time of the
// whole process, garbage collection included: cpu-ns/op) and its
// allocations. One prompt runs before the timer starts, so each op is a
// prompt in a session already open and used. body=json also encodes each
// request as JSON before the model gets it, standing for what sending the
// history costs a real provider: that part grows with the history by
// nature. Target (issue 14, docs/performance.md): cpu-ns/op at
// history=10000 within 2x of history=10, body=none.
func BenchmarkEnginePrompt(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		for _, body := range []string{"none", "json"} {
			b.Run(fmt.Sprintf("history=%d/body=%s", n, body), func(b *testing.B) {
				benchPrompts(b, n, body == "json")
			})
		}
	}
}

func benchPrompts(b *testing.B, n int, encode bool) {
	root := b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	var script strings.Builder
	script.WriteString(`{"turns":[`)
	for i := range b.N + 1 {
		if i > 0 {
			script.WriteByte(',')
		}
		script.WriteString(`{"steps":[{"text":"Done: the change is in place."}]}`)
	}
	script.WriteString(`]}`)
	must(os.WriteFile(filepath.Join(root, "script.json"), []byte(script.String()), 0o600))
	must(os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"titles":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}}}`), 0o600))
	e, err := engine.New(engine.Options{DataRoot: root})
	must(err)
	defer e.Shutdown(context.Background(), engine.Abort)
	if encode {
		engine.WrapProvider(e, "fake", func(p provider.Provider) provider.Provider { return encodingModel{p} })
	}
	cwd := b.TempDir()
	ws, err := e.AddWorkspace(cwd, "bench")
	must(err)
	s, err := e.Session(promptBenchHistory(b, e, ws.ID, cwd, n))
	must(err)
	settled := make(chan *engine.AgentSettledEvent, 1)
	e.Subscribe(func(ev engine.Event) {
		if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok {
			settled <- p
		}
	})
	prompt := func(i int) {
		if _, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprint("r", i), Text: "Rename the helper and update its callers."}); err != nil {
			b.Fatal(err)
		}
		select {
		case p := <-settled:
			if p.Outcome != engine.OutcomeCompleted {
				b.Fatalf("prompt %d: %+v", i, p.Error)
			}
		case <-time.After(time.Minute):
			b.Fatal("the prompt did not settle")
		}
	}
	prompt(-1)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		prompt(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// promptBenchHistory writes a session of n messages of about 200 bytes
// (user and assistant in turn) and returns its id.
func promptBenchHistory(tb testing.TB, e *engine.Engine, wsID, cwd string, n int) string {
	tb.Helper()
	text := strings.Repeat("the engine reads the history and builds a request ", 4)
	msgs := make([]convo.Message, n)
	for i := range msgs {
		m := convo.Message{Role: convo.RoleUser, Timestamp: int64(i), Content: []convo.Block{{Type: convo.BlockText, Text: fmt.Sprint(i, " ", text)}}}
		if i%2 == 1 {
			m.Role, m.Provider, m.Model, m.StopReason = convo.RoleAssistant, "fake", "m1", convo.StopEnd
		}
		msgs[i] = m
	}
	return storeHistory(tb, e, wsID, cwd, msgs)
}

// encodingModel encodes each request as JSON before passing it on.
type encodingModel struct{ provider.Provider }

func (p encodingModel) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	if err := json.NewEncoder(io.Discard).Encode(req); err != nil {
		return convo.Message{}, err
	}
	return p.Provider.Stream(ctx, req, onDelta)
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPromptWithTenToolCalls measures one prompt whose model calls a
// tool ten times, a call a reply (a small read), then answers, in a
// persistent session, with the run's journal (docs/storage.md: a fsync
// per tool start and per completed reply, 21 here) and without it. Target
// (issue 24, docs/performance.md): journal=on costs at most 10% more CPU
// and time than journal=off on tmpfs (TMPDIR=/dev/shm); the real disk's
// figures are reported too.
func BenchmarkPromptWithTenToolCalls(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("journal=%v", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			benchToolPrompts(b, on)
		})
	}
}

func benchToolPrompts(b *testing.B, journal bool) {
	root := b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	var script strings.Builder
	script.WriteString(`{"turns":[`)
	for i := range b.N + 1 {
		for c := range 10 {
			fmt.Fprintf(&script, `{"steps":[{"toolCall":{"id":"c%d-%d","name":"read","arguments":{"path":"a.txt"}}}]},`, i, c)
		}
		script.WriteString(`{"steps":[{"text":"Done: read it ten times."}]}`)
		if i < b.N {
			script.WriteByte(',')
		}
	}
	script.WriteString(`]}`)
	must(os.WriteFile(filepath.Join(root, "script.json"), []byte(script.String()), 0o600))
	must(os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"titles":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}}}`), 0o600))
	e, err := engine.New(engine.Options{DataRoot: root})
	must(err)
	defer e.Shutdown(context.Background(), engine.Abort)
	if !journal {
		engine.DisableJournal(e)
	}
	cwd := b.TempDir()
	must(os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("package main\n\nfunc main() {}\n"), 0o600))
	ws, err := e.AddWorkspace(cwd, "bench")
	must(err)
	s, err := e.CreateSession(ws.ID, engine.SessionOptions{})
	must(err)
	settled := make(chan *engine.AgentSettledEvent, 1)
	e.Subscribe(func(ev engine.Event) {
		if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok {
			settled <- p
		}
	})
	prompt := func(i int) {
		if _, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprint("r", i), Text: "Read a.txt ten times."}); err != nil {
			b.Fatal(err)
		}
		select {
		case p := <-settled:
			if p.Outcome != engine.OutcomeCompleted {
				b.Fatalf("prompt %d: %+v", i, p.Error)
			}
		case <-time.After(time.Minute):
			b.Fatal("the prompt did not settle")
		}
	}
	prompt(-1)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		prompt(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
