package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// harness is an engine over a temp data root with a scripted model.
type harness struct {
	t    *testing.T
	root string
	ws   string
	e    *engine.Engine
	// opts are the engine's options besides the data root.
	opts engine.Options

	mu     sync.Mutex
	events []engine.Event
}

func newHarness(t *testing.T, script string) *harness {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","images":true,"efforts":["low","high"]},{"id":"m2"}]}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root}
	h.start()
	// The engine (its trace writers, docs/traces.md) stops before the temp
	// dirs are removed.
	t.Cleanup(func() { _ = h.e.Shutdown(context.Background(), engine.Abort) })
	work := t.TempDir()
	ws, err := h.e.AddWorkspace(work, "work")
	if err != nil {
		t.Fatal(err)
	}
	h.ws = ws.ID
	return h
}

func (h *harness) start() {
	opts := h.opts
	opts.DataRoot = h.root
	e, err := engine.New(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.e = e
	e.Subscribe(func(ev engine.Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	})
}

func (h *harness) restart() {
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		h.t.Fatal(err)
	}
	h.start()
}

func (h *harness) settled(runID string) *engine.AgentSettledEvent {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, ev := range h.events {
			if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok && p.RunID == runID {
				h.mu.Unlock()
				return p
			}
		}
		h.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("run %s never settled", runID)
	return nil
}

func (h *harness) newSession() *engine.Session {
	h.t.Helper()
	s, err := h.e.NewSession(h.ws)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func TestPromptStreamsAndCommits(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"Hel"},{"text":"lo"}]}]}`)
	s := h.newSession()
	if !s.Snapshot().Draft {
		t.Fatal("a new session must be a draft")
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %q: %+v", got.Outcome, got.Error)
	}
	snap := s.Snapshot()
	if snap.State.MessageCount != 2 || snap.State.Messages[1].Text() != "Hello" || !snap.State.Unread {
		t.Fatalf("unexpected state: %+v", snap.State)
	}
	if len(snap.State.PromptTimings) != 1 || !snap.State.PromptTimings[0].FinishedAt.Set {
		t.Fatalf("timings: %+v", snap.State.PromptTimings)
	}
	// The same request id and content answers with the original run.
	again, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil || again.RunID != res.RunID {
		t.Fatalf("dedup: %+v %v", again, err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "other"}); engine.CodeOf(err) != engine.CodeRequestConflict {
		t.Fatalf("want request_conflict, got %v", err)
	}

	id := s.ID()
	h.restart()
	s2, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	snap = s2.Snapshot()
	if snap.State.MessageCount != 2 || snap.State.Messages[1].Text() != "Hello" || len(snap.State.PromptTimings) != 1 {
		t.Fatalf("reopened state: %+v", snap.State)
	}
	list, err := h.e.List(h.ws, false)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].UserMessageCount != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func TestToolLoopAndDenial(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"steps":[{"toolCall":{"id":"c1","name":"write","arguments":{"path":"a.txt","content":"x"}}}]},
		{"steps":[{"toolCall":{"id":"c2","name":"ls","arguments":{}}}]},
		{"steps":[{"text":"done"}]}]}`)
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("outcome %q %+v", got.Outcome, got.Error)
	}
	msgs := s.Snapshot().State.Messages
	if len(msgs) != 6 {
		t.Fatalf("want 6 messages, got %d", len(msgs))
	}
	// read-only denies write: an ordinary tool error for the model.
	if !msgs[2].IsError || !strings.Contains(msgs[2].Content[0].Text, "ermission") {
		t.Fatalf("write under read-only: %+v", msgs[2])
	}
	if msgs[4].IsError {
		t.Fatalf("ls failed: %+v", msgs[4])
	}
}

func TestAbortKeepsPartialText(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"partial"},{"hang":true}]},{"steps":[{"text":" and the rest"}]}]}`)
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the text to stream before stopping.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st := s.Snapshot().State.Streaming; st != nil && len(st.Content) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no streaming text")
		}
		time.Sleep(time.Millisecond)
	}
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCancelled {
		t.Fatalf("outcome %q", got.Outcome)
	}
	last := snap.State.Messages[len(snap.State.Messages)-1]
	if last.StopReason != convo.StopAborted || last.Text() != "partial" {
		t.Fatalf("last message: %+v", last)
	}
	if !snap.State.CanResume || !snap.State.PromptTimings[0].Stopped {
		t.Fatalf("want resumable and stopped timing: %+v", snap.State)
	}
	r2, err := s.Resume()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(r2.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("resume outcome %q", got.Outcome)
	}
	st := s.Snapshot().State
	if len(st.PromptTimings) != 2 || st.PromptTimings[1].UserMessageIndex != 0 || countRole(st.Messages, convo.RoleUser) != 1 {
		t.Fatalf("resume must not repeat the input: %+v", st)
	}
}

func countRole(msgs []convo.Message, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}

func TestQueueDrainsInOrder(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"waitFile":"go1"},{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]}]}`)
	s := h.newSession()
	r1, _ := s.Prompt(engine.PromptInput{RequestID: "a", Text: "1"})
	r2, err := s.Prompt(engine.PromptInput{RequestID: "b", Text: "2"})
	if err != nil || !r2.Queued {
		t.Fatalf("second prompt should queue: %+v %v", r2, err)
	}
	r3, _ := s.Prompt(engine.PromptInput{RequestID: "c", Text: "3"})
	if _, err := s.Queue(engine.QueueAction{ID: "c", Action: engine.QueueMove, BeforeID: ptr("b")}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root, "go1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.settled(r1.RunID)
	h.settled(r3.RunID)
	h.settled(r2.RunID)
	var users []string
	for _, m := range s.Snapshot().State.Messages {
		if m.Role == convo.RoleUser {
			users = append(users, m.Text())
		}
	}
	if strings.Join(users, ",") != "1,3,2" {
		t.Fatalf("order %v", users)
	}
}

func ptr[T any](v T) *T { return &v }

func TestSetModelEffort(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	s := h.newSession()
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, ptr("high")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m2"}, ptr("high")); engine.CodeOf(err) != engine.CodeInvalidModelEffort {
		t.Fatalf("want invalid_model_effort, got %v", err)
	}
	snap, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m2"}, nil)
	if err != nil || snap.Effort != "default" {
		t.Fatalf("omitted effort unsupported by m2 must become default: %v %v", snap.Effort, err)
	}
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "nope"}, nil); engine.CodeOf(err) != engine.CodeModelNotFound {
		t.Fatalf("want model_not_found, got %v", err)
	}
	// New sessions remember the choice.
	if got := h.newSession().Snapshot().Model; got == nil || got.ID != "m2" {
		t.Fatalf("remembered model: %+v", got)
	}
	_ = json.Valid
}

// Concurrent opens of one id share one load and one instance.
func TestConcurrentOpensShareOneSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"hi"}]}]}`)
	s := h.newSession()
	res, _ := s.Prompt(engine.PromptInput{RequestID: "r", Text: "x"})
	h.settled(res.RunID)
	id := s.ID()
	h.restart()
	var wg sync.WaitGroup
	got := make([]*engine.Session, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.e.Session(id)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("two instances of one session")
		}
	}
	if _, err := got[0].SetTitle("writable"); err != nil {
		t.Fatalf("the shared instance must be writable: %v", err)
	}
}

// Resuming after a stop asks the model to go on: the request never ends
// with the model's own partial answer (APIs treat that as a prefill with
// rules of its own), and history keeps no trace of the extra message.
func TestResumeRequestEndsWithAUserMessage(t *testing.T) {
	h := newHarness(t, `{"log":"requests.jsonl","turns":[{"steps":[{"text":"partial "},{"hang":true}]},{"steps":[{"text":"rest"}]}]}`)
	s := h.newSession()
	res, _ := s.Prompt(engine.PromptInput{RequestID: "r", Text: "go"})
	waitFor(t, func() bool { st := s.Snapshot().State.Streaming; return st != nil && len(st.Content) > 0 })
	if _, err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	r2, err := s.Resume()
	if err != nil {
		t.Fatal(err)
	}
	h.settled(r2.RunID)
	log, _ := os.ReadFile(filepath.Join(h.root, "requests.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &req); err != nil {
		t.Fatal(err)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != convo.RoleUser || len(last.Content) == 0 || !strings.Contains(last.Content[0].Text, "Continue") {
		t.Fatalf("resume request ends with %+v", last)
	}
	for _, m := range s.Snapshot().State.Messages {
		if strings.Contains(m.Text(), "Continue from where") {
			t.Fatal("the continuation prompt reached history")
		}
	}
}

// A prompt sent while an abort is still settling runs once the stopped
// run has ended, ahead of the inputs the abort kept paused.
func TestPromptDuringAbortRunsNext(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"slow","steps":[{"text":"x"},{"hang":true}]},{"match":"kept","steps":[{"text":"kept ran"}]},{"match":"next","steps":[{"text":"next ran"}]}]}`)
	s := h.newSession()
	r1, _ := s.Prompt(engine.PromptInput{RequestID: "slow", Text: "slow"})
	waitFor(t, func() bool { st := s.Snapshot().State.Streaming; return st != nil && len(st.Content) > 0 })
	kept, _ := s.Prompt(engine.PromptInput{RequestID: "kept", Text: "kept"})
	wait := s.RequestAbort()
	next, err := s.Prompt(engine.PromptInput{RequestID: "next", Text: "next"})
	if err != nil || !next.Queued {
		t.Fatalf("%+v %v", next, err)
	}
	if _, err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.settled(r1.RunID)
	if got := h.settled(next.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("the prompt sent during the abort: %+v", got)
	}
	h.settled(kept.RunID)
	var order []string
	for _, m := range s.Snapshot().State.Messages {
		if m.Role == convo.RoleUser {
			order = append(order, m.Text())
		}
	}
	if strings.Join(order, ",") != "slow,next,kept" {
		t.Fatalf("order %v", order)
	}
}
