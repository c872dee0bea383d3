package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// terminal is an engine that lets go of idle sessions, as the command line
// builds it: loop chat or loop run in a terminal, on the harness's data
// root (two of them are two processes, each with its own locks).
func (h *harness) terminal() *process {
	h.t.Helper()
	e, err := engine.New(engine.Options{DataRoot: h.root, LetGoWhenIdle: true})
	if err != nil {
		h.t.Fatal(err)
	}
	p := &process{t: h.t, e: e, settled: make(chan string, 16)}
	e.Subscribe(func(ev engine.Event) {
		if s, ok := ev.Payload.(*engine.AgentSettledEvent); ok {
			p.settled <- s.RunID
		}
	})
	h.t.Cleanup(func() { p.exit() })
	return p
}

// run is prompt, then Wait: the run's goroutine has returned, so the
// session has let go of its lock if it has no more work.
func (p *process) run(s *engine.Session, text string) {
	p.t.Helper()
	p.prompt(s, text)
	if err := s.Wait(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// newSession is a new session of the process in workspace ws.
func (p *process) newSession(ws string) *engine.Session {
	p.t.Helper()
	s, err := p.e.NewSession(ws)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// open is the process's session id, opened if it is not yet.
func (p *process) open(id string) *engine.Session {
	p.t.Helper()
	s, err := p.e.Session(id)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func spoken(msgs []convo.Message) string {
	var out []string
	for i := range msgs {
		out = append(out, msgs[i].Role+":"+msgs[i].Text())
	}
	return strings.Join(out, " ")
}

// byPrompt answers each prompt with its own turn, whichever process asks
// (each has its own copy of the script).
const byPrompt = `{"turns":[{"match":"first","steps":[{"text":"one"}]},{"match":"second","steps":[{"text":"two"}]},{"match":"third","steps":[{"text":"three"}]},
{"match":"won","steps":[{"text":"two"}]},{"match":"after","steps":[{"text":"three"}]}]}`

// An idle session of one process lets another continue the conversation:
// the other opens it writable and runs a prompt; the first picks up what
// the other said before its own next prompt (and only that), and the
// model sees the whole conversation. Then the other way round.
func TestIdleSessionLetsAnotherProcessContinueTheConversation(t *testing.T) {
	h := newHarness(t, byPrompt)
	chat, run := h.terminal(), h.terminal()
	a := chat.newSession(h.ws)
	chat.run(a, "first")
	b := run.open(a.ID())
	run.run(b, "second")
	if n := b.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("the other process holds %d messages, want 4", n)
	}

	msgs, from, err := a.PickUp()
	if err != nil {
		t.Fatal(err)
	}
	if from != 2 || spoken(msgs) != "user:second assistant:two" {
		t.Fatalf("picked up from %d: %s", from, spoken(msgs))
	}
	if again, _, err := a.PickUp(); err != nil || len(again) != 0 {
		t.Fatalf("picked up twice: %s, %v", spoken(again), err)
	}
	chat.run(a, "third")
	snap := a.Snapshot()
	if got := spoken(snap.State.Messages); got != "user:first assistant:one user:second assistant:two user:third assistant:three" {
		t.Fatalf("history: %s", got)
	}
	if len(snap.State.PromptTimings) != 3 {
		t.Fatalf("%d prompt timings, want 3", len(snap.State.PromptTimings))
	}
	msgs, from, err = b.PickUp()
	if err != nil || from != 4 || spoken(msgs) != "user:third assistant:three" {
		t.Fatalf("the other picked up from %d: %s, %v", from, spoken(msgs), err)
	}
}

// Two processes starting at once on one idle session: exactly one takes
// the lock; the other is refused with session_locked and changes nothing,
// and continues once the winner is idle again, from what the winner said.
func TestTwoProcessesStartingAtOnceOneWinsTheOtherIsSessionLocked(t *testing.T) {
	h := newHarness(t, byPrompt)
	p1, p2 := h.terminal(), h.terminal()
	a := p1.newSession(h.ws)
	p1.run(a, "first")
	b := p2.open(a.ID())
	// p1 is about to prompt: it holds the lock from here.
	if _, _, err := a.PickUp(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prompt(engine.PromptInput{RequestID: "lost", Text: "lost"}); engine.CodeOf(err) != engine.CodeSessionLocked {
		t.Fatalf("the loser's prompt: %v", err)
	}
	if _, _, err := b.PickUp(); engine.CodeOf(err) != engine.CodeSessionLocked {
		t.Fatalf("the loser's pick-up: %v", err)
	}
	p1.run(a, "won")
	p2.run(b, "after")
	if got := spoken(b.Snapshot().State.Messages); got != "user:first assistant:one user:won assistant:two user:after assistant:three" {
		t.Fatalf("history: %s", got)
	}
	if n := len(b.Snapshot().State.Queue); n != 0 {
		t.Fatalf("the refused prompt is queued: %d", n)
	}
}

// A session with work keeps its lock: during a run, and while an input
// waits in the queue after an abort.
func TestSessionWithWorkKeepsItsLock(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	h := newHarness(t, `{"turns":[{"steps":[{"text":"o"},{"waitFile":"`+gate+`"},{"text":"ne"}]},{"steps":[{"text":"two"}]}]}`)
	p1, p2 := h.terminal(), h.terminal()
	a := p1.newSession(h.ws)
	if _, err := a.Prompt(engine.PromptInput{RequestID: "one", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Prompt(engine.PromptInput{RequestID: "two", Text: "two"}); err != nil || !res.Queued {
		t.Fatalf("second prompt: %+v, %v", res, err)
	}
	refused := func(when string) {
		t.Helper()
		b, err := p2.e.Session(a.ID())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Prompt(engine.PromptInput{RequestID: "x-" + when, Text: "x"}); engine.CodeOf(err) != engine.CodeSessionLocked {
			t.Fatalf("%s: the other process's prompt: %v", when, err)
		}
	}
	refused("during the run")
	a.RequestAbort()
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Snapshot().State.Queue); n != 1 {
		t.Fatalf("%d queued, want 1", n)
	}
	refused("with a queued input")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A session this process let go of while idle is not one another process
// writes: switching back to it succeeds, and its prompts run.
func TestRuntimeSwitchesBackToASessionItLetGoOf(t *testing.T) {
	h := newHarness(t, byPrompt)
	p := h.terminal()
	first := p.newSession(h.ws)
	p.run(first, "first")
	rt := p.e.NewRuntime(first)
	if _, err := rt.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SwitchSession(context.Background(), first.ID()); err != nil {
		t.Fatalf("switch back to the session let go of: %v", err)
	}
	p.run(rt.Session(), "second")
	if n := rt.Session().Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
}

// A budget set on an idle session that let go of its lock, after another
// process wrote the session, takes the lock, picks up the other's work and
// is saved, then lets go again.
func TestBudgetOnAnIdleSessionAfterAnotherProcessWroteIt(t *testing.T) {
	h := newHarness(t, byPrompt)
	p1, p2 := h.terminal(), h.terminal()
	a := p1.newSession(h.ws)
	p1.run(a, "first")
	b := p2.open(a.ID())
	p2.run(b, "second")
	snap, err := a.SetBudget(engine.BudgetChange{SessionTokens: &engine.BudgetLimit[int]{Value: 100000}})
	if err != nil {
		t.Fatalf("set_budget: %v", err)
	}
	if snap.State.MessageCount != 4 {
		t.Fatalf("%d messages, want the other's 4", snap.State.MessageCount)
	}
	// Let go again: the other process writes on.
	p2.run(b, "third")
}

// A session this process let go of, whose history another process then
// rewrote (a rewind), is opened again before its next write; the
// instance that replaces it keeps this process's agent options, which
// live in no file (engine/agentoptions.go).
func TestAgentOptionsSurviveTheSessionBeingOpenedAgainAfterAnotherProcessRewoundIt(t *testing.T) {
	h := newHarness(t, byPrompt)
	chat, run := h.terminal(), h.terminal()
	a := chat.newSession(h.ws)
	chat.run(a, "first")
	chat.run(a, "second")
	opts := engine.AgentOptions{SystemPrompt: "You are a pirate.", DisallowedTools: []string{"bash"}, MaxTurns: 7}
	if err := a.SetAgentOptions(opts); err != nil {
		t.Fatal(err)
	}
	b := run.open(a.ID())
	if _, _, err := b.Rewind(context.Background(), 2, false); err != nil {
		t.Fatal(err)
	}
	// b's command is done: it let go of the lock. The next write takes the lock again: the history was rewritten, so
	// the session is opened again.
	if _, _, err := a.PickUp(); err != nil {
		t.Fatal(err)
	}
	cur := chat.open(a.ID())
	if cur == a {
		t.Fatal("a session whose history another process rewrote was not opened again")
	}
	got := cur.AgentOptions()
	if got.SystemPrompt != opts.SystemPrompt || got.MaxTurns != 7 || len(got.DisallowedTools) != 1 {
		t.Fatalf("agent options after the session was opened again: %+v", got)
	}
	if n := cur.Snapshot().State.MessageCount; n != 2 {
		t.Fatalf("%d messages after the other's rewind, want 2", n)
	}
}

// An edit refused before its command starts (here: another server's
// streamId) lets go of the lock its relock took, as a refused prompt or
// command does: another process may continue the conversation.
func TestARefusedEditLetsGoOfTheLock(t *testing.T) {
	h := newHarness(t, byPrompt)
	chat, run := h.terminal(), h.terminal()
	a := chat.newSession(h.ws)
	chat.run(a, "first")
	other := "another-server"
	if _, err := a.Edit(0, engine.PromptInput{RequestID: "e1", Text: "again", StreamID: &other}); engine.CodeOf(err) != engine.CodeDeliveryUnknown {
		t.Fatalf("edit with another server's stream: %v", err)
	}
	b := run.open(a.ID())
	run.run(b, "second")
	if n := b.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("the other process holds %d messages, want 4", n)
	}
}

// A fork made in one terminal (an engine that lets go of idle sessions)
// is idle once made, so another terminal may continue it, as it may
// continue the session it was forked from.
func TestAForkMadeInOneTerminalCanBeContinuedInAnother(t *testing.T) {
	h := newHarness(t, byPrompt)
	chat, run := h.terminal(), h.terminal()
	a := chat.newSession(h.ws)
	chat.run(a, "first")
	f, err := a.Fork(2, "")
	if err != nil {
		t.Fatal(err)
	}
	b := run.open(f.ID())
	if _, _, err := b.PickUp(); err != nil {
		t.Fatalf("the other terminal cannot write the idle fork: %v", err)
	}
}
