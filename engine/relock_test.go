package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// process is a second engine on the harness's data root: another loop
// process, with its own locks.
type process struct {
	t       *testing.T
	e       *engine.Engine
	settled chan string // run ids, as their runs settle
}

func (h *harness) otherProcess() *process {
	h.t.Helper()
	e, err := engine.New(engine.Options{DataRoot: h.root})
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

// exit shuts the process down, which lets its sessions' locks go.
func (p *process) exit() {
	if p.e != nil {
		_ = p.e.Shutdown(context.Background(), engine.Drain)
		p.e = nil
	}
}

// prompt runs one prompt on s to its end.
func (p *process) prompt(s *engine.Session, text string) {
	p.t.Helper()
	res, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text})
	if err != nil {
		p.t.Fatalf("prompt %q: %v", text, err)
	}
	for {
		select {
		case id := <-p.settled:
			if id == res.RunID {
				return
			}
		case <-time.After(watchdog):
			p.t.Fatalf("run %s never settled", res.RunID)
		}
	}
}

const threeTurns = `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]}]}`

// A process that got session_locked writes the session once the process
// that held it has exited: the same instance, when nothing changed.
func TestSessionLockedElsewhereIsWritableOnceTheWriterExits(t *testing.T) {
	h := newHarness(t, threeTurns)
	writer := h.otherProcess()
	ws, err := writer.e.Session(h.newSavedSession(t, writer).ID())
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.e.Session(ws.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "x", Text: "x"}); engine.CodeOf(err) != engine.CodeSessionLocked {
		t.Fatalf("prompt while the other process writes it: %v", err)
	}
	if _, err := s.SetTitle("mine"); engine.CodeOf(err) != engine.CodeSessionLocked {
		t.Fatalf("set_title while the other process writes it: %v", err)
	}
	writer.exit()

	if _, err := s.SetTitle("mine"); err != nil {
		t.Fatalf("set_title after the writer exited: %v", err)
	}
	if again, err := h.e.Session(s.ID()); err != nil || again != s {
		t.Fatalf("opened again: %v (same instance: %v)", err, again == s)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "y", Text: "y"})
	if err != nil {
		t.Fatalf("prompt after the writer exited: %v", err)
	}
	if st := h.settled(res.RunID); st.Outcome != engine.OutcomeCompleted {
		t.Fatalf("run: %+v", st)
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
}

// When the other process changed the session before it exited, this
// process's copy is out of date: opening the session again gives an
// instance with those changes, which writes; the old instance refuses and
// says so, and a Runtime holding it moves to the new one.
func TestSessionChangedElsewhereIsOpenedAgainWhenTheWriterExits(t *testing.T) {
	h := newHarness(t, threeTurns)
	writer := h.otherProcess()
	saved := h.newSavedSession(t, writer)
	old, err := h.e.Session(saved.ID())
	if err != nil {
		t.Fatal(err)
	}
	rt := h.e.NewRuntime(old)
	writer.prompt(saved, "more")
	writer.exit()

	// The next open replaces the out-of-date instance.
	s, err := h.e.Session(old.ID())
	if err != nil {
		t.Fatal(err)
	}
	if s == old {
		t.Fatal("the out-of-date instance was kept")
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("%d messages, want the other process's 4", n)
	}
	_, err = old.Prompt(engine.PromptInput{RequestID: "z", Text: "z"})
	if engine.CodeOf(err) != engine.CodeSessionLocked || !strings.Contains(err.Error(), "opened again") {
		t.Fatalf("prompt to the old instance: %v", err)
	}
	if rt.Session() != s {
		t.Fatal("the runtime kept the old instance")
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "w", Text: "w"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	if n := s.Snapshot().State.MessageCount; n != 6 {
		t.Fatalf("%d messages, want 6", n)
	}
}

// The same when the first write after the writer exited goes to the
// out-of-date instance (a Runtime's current session): it is refused, and
// the Runtime's current session is then the one opened again.
func TestWriteToASessionChangedElsewhereOpensItAgain(t *testing.T) {
	h := newHarness(t, threeTurns)
	writer := h.otherProcess()
	saved := h.newSavedSession(t, writer)
	old, err := h.e.Session(saved.ID())
	if err != nil {
		t.Fatal(err)
	}
	rt := h.e.NewRuntime(old)
	writer.prompt(saved, "more")
	writer.exit()

	_, err = rt.Session().Prompt(engine.PromptInput{RequestID: "z", Text: "z"})
	if engine.CodeOf(err) != engine.CodeSessionLocked || !strings.Contains(err.Error(), "opened again") {
		t.Fatalf("prompt to the out-of-date instance: %v", err)
	}
	s := rt.Session()
	if s == old || s.Snapshot().State.MessageCount != 4 {
		t.Fatalf("runtime session: same %v, %d messages", s == old, s.Snapshot().State.MessageCount)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "w", Text: "w"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
}

// Runtime.SwitchSession into a session another process writes is refused
// with session_locked, as its first prompt would be; the current session
// stays. Once that process has exited, the switch succeeds.
func TestSwitchIntoASessionAnotherProcessWritesIsRefused(t *testing.T) {
	h := newHarness(t, threeTurns)
	writer := h.otherProcess()
	theirs := h.newSavedSession(t, writer)
	mine := h.newSession()
	rt := h.e.NewRuntime(mine)
	_, err := rt.SwitchSession(context.Background(), theirs.ID())
	if engine.CodeOf(err) != engine.CodeSessionLocked {
		t.Fatalf("switch into a session another process writes: %v", err)
	}
	if rt.Session() != mine {
		t.Fatal("a refused switch must keep the current session")
	}
	writer.exit()
	if _, err := rt.SwitchSession(context.Background(), theirs.ID()); err != nil {
		t.Fatalf("switch after the writer exited: %v", err)
	}
	res, err := rt.Session().Prompt(engine.PromptInput{RequestID: "p", Text: "p"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
}

// newSavedSession makes a session in p with one completed prompt.
func (h *harness) newSavedSession(t *testing.T, p *process) *engine.Session {
	t.Helper()
	s, err := p.e.NewSession(h.ws)
	if err != nil {
		t.Fatal(err)
	}
	p.prompt(s, "first")
	return s
}
