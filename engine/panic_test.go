package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
)

// panickingModel is a model client with a bug: it panics on the requests
// when selects, after gate (if any) is closed; the others go to the
// scripted model it wraps.
type panickingModel struct {
	provider.Provider
	when func(provider.Request) bool
	gate chan struct{}
}

func (p panickingModel) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	if p.when(req) {
		if p.gate != nil {
			<-p.gate
		}
		panic("test: the model client panicked")
	}
	return p.Provider.Stream(ctx, req, onDelta)
}

func panicOn(h *harness, when func(provider.Request) bool, gate chan struct{}) {
	engine.WrapProvider(h.e, "fake", func(p provider.Provider) provider.Provider {
		return panickingModel{Provider: p, when: when, gate: gate}
	})
}

func lastUserHas(text string) func(provider.Request) bool {
	return func(req provider.Request) bool {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == convo.RoleUser {
				return strings.Contains(req.Messages[i].Text(), text)
			}
		}
		return false
	}
}

func purpose(p string) func(provider.Request) bool {
	return func(req provider.Request) bool { return req.Purpose == p }
}

// usable checks that nothing holds the session: commands answer, abort
// and config/reload return, and a prompt runs to completion.
func usable(t *testing.T, h *harness, s *engine.Session, requestID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if snap, err := s.Abort(ctx); err != nil || snap.Operation != engine.OpIdle || snap.State.IsWaitingForApproval {
		t.Fatalf("abort: %v (snapshot %+v)", err, snap)
	}
	if _, err := s.SetTitle("still usable"); err != nil {
		t.Fatalf("set_title: %v", err)
	}
	if err := h.e.ReloadConfig(ctx); err != nil {
		t.Fatalf("config/reload: %v", err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: requestID, Text: requestID})
	if err != nil || res.Queued {
		t.Fatalf("prompt after the panic: %+v %v", res, err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("run after the panic: %s %+v", got.Outcome, got.Error)
	}
}

// A model client that panics mid-run: the run settles with an error
// outcome (internal_error), its user message is saved, the input queued
// behind it runs, and the session stays usable.
func TestPanicInRunSettlesItWithAnError(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"after","steps":[{"text":"A"}]},{"match":"again","steps":[{"text":"B"}]}]}`)
	s := h.newSession()
	gate := make(chan struct{})
	panicOn(h, lastUserHas("boom"), gate)
	first, err := s.Prompt(engine.PromptInput{RequestID: "boom", Text: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := s.Prompt(engine.PromptInput{RequestID: "after", Text: "after"})
	if err != nil || !queued.Queued {
		t.Fatalf("second prompt: %+v %v", queued, err)
	}
	close(gate)
	got := h.settled(first.RunID)
	if got.Outcome != engine.OutcomeError || got.Error == nil || got.Error.Code != engine.CodeInternal {
		t.Fatalf("panicked run settled %s %+v", got.Outcome, got.Error)
	}
	if got := h.settled(queued.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("queued run: %s %+v", got.Outcome, got.Error)
	}
	usable(t, h, s, "again")
	h.restart()
	s2, err := h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range s2.Snapshot().State.Messages {
		if m.Role == convo.RoleUser {
			users = append(users, m.Text())
		}
	}
	if strings.Join(users, ",") != "boom,after,again" {
		t.Fatalf("saved user messages: %v", users)
	}
}

// A panic while a tool call waits for approval (the front end's approver
// panics): the approval is withdrawn, the call gets an error result so the
// history stays a valid conversation, and the run settles with an error.
func TestPanicInApprovalSettlesRunAndAnswersTheCall(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"match":"run it","steps":[{"toolCall":{"id":"c1","name":"bash","arguments":{"command":"echo hi"}}}]},
		{"match":"again","steps":[{"text":"B"}]}]}`)
	s := h.newSession()
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	h.e.SetApprover(panickingApprover{})
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "run it"})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settled(res.RunID)
	if got.Outcome != engine.OutcomeError || got.Error == nil || got.Error.Code != engine.CodeInternal {
		t.Fatalf("run settled %s %+v", got.Outcome, got.Error)
	}
	msgs := s.Snapshot().State.Messages
	last := msgs[len(msgs)-1]
	if last.Role != convo.RoleToolResult || last.ToolCallID != "c1" || !last.IsError {
		t.Fatalf("the call is not answered: last message %+v", last)
	}
	usable(t, h, s, "again")
}

type panickingApprover struct{}

func (panickingApprover) Ask(context.Context, engine.ApprovalRequest) (string, error) {
	panic("test: the approver panicked")
}

// A panic inside session/compact: the command answers internal_error,
// the compaction is over (idle, no start time, no checkpoint), and the
// session is usable.
func TestPanicInCompactionReleasesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]},{"match":"again","steps":[{"text":"B"}]}]}`)
	s := h.newSession()
	for _, text := range []string{"first", "second"} {
		res, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		h.settled(res.RunID)
	}
	panicOn(h, purpose(provider.PurposeSummary), nil)
	_, err := s.Compact(context.Background())
	if engine.CodeOf(err) != engine.CodeInternal {
		t.Fatalf("compact: want internal_error, got %v", err)
	}
	snap := s.Snapshot()
	if snap.Operation != engine.OpIdle || snap.State.CompactionStartedAt != nil || snap.State.Compaction != nil {
		t.Fatalf("after the panic: operation %q, compactionStartedAt %v, compaction %+v", snap.Operation, snap.State.CompactionStartedAt, snap.State.Compaction)
	}
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil); err != nil {
		t.Fatalf("set_model: %v", err)
	}
	usable(t, h, s, "again")
}

// A panic inside session/generate_title, and one in background title
// work (which has no caller: it must not end the process): the command
// answers internal_error, the background one becomes the title's error,
// and the session is usable.
func TestPanicInTitleGenerationReleasesTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"first","steps":[{"text":"a1"}]},{"match":"again","steps":[{"text":"B"}]}]}`)
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","titles":true,"models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	panicOn(h, purpose(provider.PurposeTitle), nil)
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "first", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	waitForTitle(t, s)
	if snap := s.Snapshot(); snap.State.TitleError == nil || !strings.Contains(*snap.State.TitleError, "internal error") {
		t.Fatalf("background title: titleError %v", snap.State.TitleError)
	}
	if _, err := s.GenerateTitle(context.Background()); engine.CodeOf(err) != engine.CodeInternal {
		t.Fatalf("generate_title: want internal_error, got %v", err)
	}
	if snap := s.Snapshot(); snap.Operation != engine.OpIdle {
		t.Fatalf("after the panic: operation %q", snap.Operation)
	}
	usable(t, h, s, "again")
}
