package rpc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/store"
)

// BenchmarkPromptCost sweeps the size of the history a prompt is sent
// into: one prompt of a short answer, through the real server in process,
// from the request to the session/state that follows its settlement.
// bytes/prompt is what the client reads meanwhile; ns/op and allocs/op
// are the whole process's (docs/performance.md "Cost of a prompt as
// history grows"). Each stateMessages mode is a client of its own; a
// delta client's first snapshot of a session is complete, so every
// session gets one prompt before the measured ones.
func BenchmarkPromptCost(b *testing.B) {
	for _, mode := range []any{"delta", true, false} {
		for _, n := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("state=%v/history=%d", mode, n), func(b *testing.B) {
				benchPromptCost(b, mode, n)
			})
		}
	}
}

// promptsPerSeed bounds how far the history drifts from its nominal size
// (two messages a prompt) before a fresh session is seeded.
const promptsPerSeed = 8

func benchPromptCost(b *testing.B, mode any, n int) {
	var c *pipeClient
	var sid string
	bytes, prompts, i := 0, 0, 0
	for b.Loop() {
		if i%promptsPerSeed == 0 {
			b.StopTimer()
			c, sid = seededServer(b, n, promptsPerSeed+1)
			c.send("initialize", map[string]any{"protocolVersion": rpc.ProtocolVersion, "capabilities": map[string]any{"stateMessages": mode}})
			c.readUntil(`"id":1,`)
			c.promptToState(sid, "warm-up")
			b.StartTimer()
		}
		c.bytes = 0
		c.promptToState(sid, fmt.Sprint("r", i))
		bytes += c.bytes
		prompts++
		i++
	}
	b.ReportMetric(float64(bytes)/float64(prompts), "bytes/prompt")
}

// promptToState sends a prompt and reads until its reply, its settlement
// and the session/state after the settlement have all come.
func (c *pipeClient) promptToState(sid, requestID string) {
	id := c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": requestID, "text": "go"})
	reply, settled, state := false, false, false
	for !reply || !state {
		line := c.readUntil("")
		switch {
		case strings.Contains(line, fmt.Sprintf(`"id":%d,`, id)):
			if strings.Contains(line, `"error"`) {
				c.t.Fatalf("prompt refused: %s", line)
			}
			reply = true
		case strings.Contains(line, "session/agent_settled"):
			settled = true
		case settled && strings.Contains(line, `"method":"session/state"`):
			state = true
		}
	}
}

// seededServer starts a server over a data root holding one session of n
// messages (a user message and a short answer per prompt, each prompt
// with its timing), with a script of turns short answers.
func seededServer(b *testing.B, n, turns int) (*pipeClient, string) {
	root := b.TempDir()
	steps := make([]string, turns)
	for i := range steps {
		steps[i] = `{"steps":[{"text":"ok"}]}`
	}
	must(b, os.WriteFile(filepath.Join(root, "script.json"), []byte(`{"turns":[`+strings.Join(steps, ",")+`]}`), 0o600))
	must(b, os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}}}`), 0o600))
	sr, err := store.OpenRoot(root)
	must(b, err)
	cwd, err := sr.NewPrivateCwd()
	must(b, err)
	st, err := sr.CreateWith("", cwd, func(h *store.Header) { h.Model = &store.ModelRef{Provider: "fake", ID: "m1"} })
	must(b, err)
	msgs := make([]convo.Message, 0, n)
	var timings []store.TimingAt
	at := int64(1_700_000_000_000)
	for len(msgs) < n {
		if len(msgs)%2 == 0 {
			timings = append(timings, store.TimingAt{Index: len(timings), Timing: seededTiming(len(timings), len(msgs), at)})
			msgs = append(msgs, convo.Message{Role: convo.RoleUser, Timestamp: at, RequestID: fmt.Sprint("seed-", len(msgs)),
				Content: []convo.Block{{Type: convo.BlockText, Text: "Please look at the next part of the change and say what you think."}}})
		} else {
			msgs = append(msgs, convo.Message{Role: convo.RoleAssistant, Timestamp: at + 500, Provider: "fake", Model: "m1", StopReason: "stop",
				Content: []convo.Block{{Type: convo.BlockText, Text: "It reads well; the second function could return early instead of nesting."}}})
		}
		at += 1000
	}
	must(b, st.Commit(msgs, nil, nil, timings...))
	must(b, st.Close())

	eng, err := engine.New(engine.Options{DataRoot: root})
	must(b, err)
	return servePipe(b, eng), st.ID()
}

// seededTiming is prompt i's finished timing, its user message at history
// index start, its answer the message after.
func seededTiming(i, start int, at int64) store.PromptTiming {
	return store.PromptTiming{ID: fmt.Sprint("run-", i), UserMessageIndex: i, MessageStartIndex: store.Some(start), MessageEndIndex: store.Some(start + 2), StartedAt: at, FinishedAt: store.Some(at + 900)}
}

// BenchmarkSessionGetTail: session/get with messagesFrom ten messages
// before the end of a 10,000-message session, whose timings it bounds
// too; bytes/get is the reply's size.
func BenchmarkSessionGetTail(b *testing.B) {
	const n = 10000
	c, sid := seededServer(b, n, 0)
	total, gets := 0, 0
	for b.Loop() {
		c.bytes = 0
		id := c.send("session/get", map[string]any{"sessionId": sid, "messagesFrom": n - 10})
		c.readUntil(fmt.Sprintf(`"id":%d,`, id))
		total += c.bytes
		gets++
	}
	b.ReportMetric(float64(total)/float64(gets), "bytes/get")
}
