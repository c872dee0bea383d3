package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
)

func TestShortPromptLeavesTheTokenizerUnloaded(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"hi"}]},{"steps":[{"text":"again"}]}]}`)
	s := h.newSession()
	for _, text := range []string{"hello", "and more"} {
		if got := h.prompt(s, text, text); got.Outcome != engine.OutcomeCompleted {
			t.Fatalf("prompt %q: %+v", text, got.Error)
		}
	}
	if engine.TokenizerLoaded(h.e) {
		t.Fatal("two short prompts, far below the context window, loaded the tokenizer")
	}
}

func TestRequestOverItsBoundIsDecidedByTheExactCount(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"first answer"}]},{"steps":[{"text":"second answer"}]}]}`)
	s := h.newSession()
	if got := h.prompt(s, "one", "a first prompt"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("first prompt: %+v", got.Error)
	}
	_, bound, exact, err := engine.BuildRequest(context.Background(), s, true)
	if err != nil {
		t.Fatal(err)
	}
	if bound < exact || bound < 2*exact {
		t.Fatalf("bound %d, exact %d: the test needs a bound well above the count", bound, exact)
	}
	// A window whose limit lies between the next request's exact count and
	// its bound: only the exact count can let it through.
	limit := exact + (bound-exact)/2
	cfg := `{"compaction":{"reserveTokens":100},"titles":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":` + strconv.Itoa(limit+100) + `}]}}}`
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.prompt(s, "two", "a second prompt"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("a request within the budget by its exact count was refused: %+v", got.Error)
	}
	if !engine.TokenizerLoaded(h.e) {
		t.Fatal("the request's bound exceeded the budget, yet nothing counted it exactly")
	}
}

// recordRequests wraps h's model so that every request it gets is kept.
func recordRequests(h *harness) func() []provider.Request {
	var mu sync.Mutex
	var reqs []provider.Request
	engine.WrapProvider(h.e, "fake", func(p provider.Provider) provider.Provider {
		return recordingModel{Provider: p, record: func(req provider.Request) {
			mu.Lock()
			reqs = append(reqs, req)
			mu.Unlock()
		}}
	})
	return func() []provider.Request {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reqs)
	}
}

type recordingModel struct {
	provider.Provider
	record func(provider.Request)
}

func (p recordingModel) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	p.record(req)
	return p.Provider.Stream(ctx, req, onDelta)
}

// toolTurn is a scripted turn that reads a file, so that the run asks the
// model again after the tool result.
const toolTurn = `{"steps":[{"toolCall":{"id":"c1","name":"read","arguments":{"path":"missing.txt"}}}]}`

func TestModelTurnAppendsToTheModelInputOfTheLastOne(t *testing.T) {
	h := newHarness(t, `{"turns":[`+toolTurn+`,{"steps":[{"text":"done"}]}]}`)
	requests := recordRequests(h)
	s := h.newSession()
	if got := h.prompt(s, "a", "first"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("prompt: %+v", got.Error)
	}
	reqs := requests()
	if len(reqs) != 2 || len(reqs[0].Messages) != 1 || len(reqs[1].Messages) != 3 {
		t.Fatalf("want requests of 1 and 3 messages: %+v", reqs)
	}
	if &reqs[0].Messages[0] != &reqs[1].Messages[0] {
		t.Fatal("the second model turn copied the model input the first one already held")
	}
	if cap(reqs[0].Messages) != len(reqs[0].Messages) {
		t.Fatal("a request's messages must be capped: appending to them would write into the session's")
	}
	if got := reqs[1].Messages[1].Role; got != convo.RoleAssistant || reqs[1].Messages[2].Role != convo.RoleToolResult {
		t.Fatalf("second request: %+v", reqs[1].Messages)
	}
}

func TestEditedSkillReachesTheNextRequestAndSparesTheLastOne(t *testing.T) {
	h := newHarness(t, `{"turns":[`+toolTurn+`,{"steps":[{"text":"ok"}]},{"steps":[{"text":"ok again"}]}]}`)
	requests := recordRequests(h)
	ws, _ := h.e.Workspaces()
	dir := filepath.Join(ws[0].Cwd, ".loop", "skills", "review")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		md := "---\nname: review\ndescription: Review a change\n---\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("BODY-ONE")
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r", Text: "go", Skills: []string{"review"}})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	write("BODY-TWO")
	if got := h.prompt(s, "r2", "again"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("second prompt: %+v", got.Error)
	}
	reqs := requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 requests, got %d", len(reqs))
	}
	if !strings.Contains(reqs[0].Messages[0].Text(), "BODY-ONE") || &reqs[0].Messages[0] != &reqs[1].Messages[0] {
		t.Fatalf("an unchanged skill is expanded once and shared between turns: %q", reqs[1].Messages[0].Text())
	}
	if got := reqs[2].Messages[0].Text(); !strings.Contains(got, "BODY-TWO") {
		t.Fatalf("the next request lacks the edited skill: %q", got)
	}
	if got := reqs[0].Messages[0].Text(); !strings.Contains(got, "BODY-ONE") || strings.Contains(got, "BODY-TWO") {
		t.Fatalf("the edit reached a request already sent: %q", got)
	}
	if m := s.Snapshot().State.Messages[0]; strings.Contains(m.Text(), "BODY") {
		t.Fatalf("the stored message must not hold the skill: %q", m.Text())
	}
}
