//go:build unix

package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/loopdev/loop/engine"
)

// These tests check what docs/lock-order.md promises: no session lock and
// no process-wide lock is held while a file is read or a subscriber works.
// A named pipe stands in for a slow disk: reading it blocks until the test
// lets it go, which it does only after the call under test has returned.
// A lock held across the read would make that call wait forever, so each
// wait is bounded by a watchdog that fails the test instead of hanging it.

// watchdog bounds waits that only a deadlock makes long.
const watchdog = 30 * time.Second

// returns fails the test unless fn returns while the test holds its gate.
func returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(watchdog):
		t.Fatalf("%s waited for the blocked work", what)
	}
}

// fifoGate replaces a file with a named pipe whose first reader blocks
// until open is called; later readers get content at once, from a regular
// file that takes the pipe's name when the first reader is let go.
type fifoGate struct {
	path, content string
	opened        chan struct{} // a reader has the pipe open and waits for content
	release       chan struct{}
	stop          chan struct{}
	done          chan struct{}
	once          sync.Once
}

func newFIFOGate(t *testing.T, path, content string) *fifoGate {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		testenv.Missing(t, "no named pipes here: %v", err)
	}
	g := &fifoGate{path: path, content: content, opened: make(chan struct{}), release: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go g.serve()
	t.Cleanup(g.close)
	return g
}

// serve holds the first reader until release. It never serves the pipe a
// second time: a writer that reopens it while the last reader still has it
// open (before that reader saw the end) writes into that reader's pipe, so
// one reader got the content many times and another a part of it.
func (g *fifoGate) serve() {
	defer close(g.done)
	// Opening for writing waits for a reader.
	f, err := os.OpenFile(g.path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	select {
	case <-g.stop:
		return
	default:
	}
	close(g.opened)
	select {
	case <-g.release:
	case <-g.stop:
	}
	// The name moves to a regular file before the held reader gets its
	// content, so every later reader opens that file, never the pipe.
	tmp := g.path + ".gate"
	if err := os.WriteFile(tmp, []byte(g.content), 0o600); err == nil {
		_ = os.Rename(tmp, g.path)
	}
	_, _ = f.WriteString(g.content)
}

// waitOpened waits until a reader blocks on the pipe.
func (g *fifoGate) waitOpened(t *testing.T) {
	t.Helper()
	select {
	case <-g.opened:
	case <-time.After(watchdog):
		t.Fatalf("nothing read %s", g.path)
	}
}

func (g *fifoGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *fifoGate) close() {
	g.open()
	close(g.stop)
	// A reader of its own ends the writer's wait for one, if no reader came.
	if f, err := os.OpenFile(g.path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		defer f.Close()
	}
	<-g.done
}

// Every reader after the held one gets the content exactly once: a request
// build reads a skill or AGENTS.md several times, and a reader that got
// the content many times, or a part of it, failed the run under load.
func TestFIFOGateGivesEveryLaterReaderTheContentOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "SKILL.md")
	gate := newFIFOGate(t, path, styleSkill)
	held := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(path)
		held <- string(b)
	}()
	gate.waitOpened(t)
	gate.open()
	if got := <-held; got != styleSkill {
		t.Fatalf("the held reader got %d bytes", len(got))
	}
	for i := range 1000 {
		if b, err := os.ReadFile(path); err != nil || string(b) != styleSkill {
			t.Fatalf("read %d after the held one: %d bytes, %v", i, len(b), err)
		}
	}
}

const styleSkill = "---\nname: style\ndescription: house style\n---\nWrite short sentences.\n"

// writeSkill adds skill "style" to the workspace of s and returns the path
// of its SKILL.md.
func writeSkill(t *testing.T, s *engine.Session) string {
	t.Helper()
	dir := filepath.Join(s.Cwd(), ".loop", "skills", "style")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "SKILL.md")
	if err := os.WriteFile(path, []byte(styleSkill), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A request build reads the skill folders when the history names a skill,
// and tokenizes the history; it used to do both holding the session lock,
// so a snapshot (session/get, on the read loop) waited for the build.
func TestSnapshotDoesNotWaitForRequestBuild(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]}]}`)
	s := h.newSession()
	skill := writeSkill(t, s)
	r1, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "use it", Skills: []string{"style"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(r1.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("first run: %+v", got)
	}

	gate := newFIFOGate(t, skill, styleSkill)
	r2, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	gate.waitOpened(t) // the build of r2's request reads the skill folder
	returns(t, "Snapshot during a request build", func() {
		if snap := s.Snapshot(); snap.Operation != engine.OpPrompt {
			t.Errorf("operation %q during the run", snap.Operation)
		}
	})
	gate.open()
	if got := h.settled(r2.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("second run: %+v", got)
	}
}

// A prompt that names a skill checks that it exists by reading the skill
// folders; it used to do that holding the session lock.
func TestSnapshotDoesNotWaitForAPromptsSkillCheck(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	s := h.newSession()
	gate := newFIFOGate(t, writeSkill(t, s), styleSkill)
	type result struct {
		res engine.PromptResult
		err error
	}
	prompted := make(chan result, 1)
	go func() {
		res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "use it", Skills: []string{"style"}})
		prompted <- result{res, err}
	}()
	gate.waitOpened(t)
	returns(t, "Snapshot during a prompt's skill check", func() { s.Snapshot() })
	gate.open()
	r := <-prompted
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := h.settled(r.res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("run: %+v", got)
	}
}

// The project instructions (AGENTS.md) are read for every request's system
// prompt, outside the session lock.
func TestSnapshotDoesNotWaitForProjectInstructions(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	s := h.newSession()
	gate := newFIFOGate(t, filepath.Join(s.Cwd(), "AGENTS.md"), "Be kind.\n")
	r, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	gate.waitOpened(t)
	returns(t, "Snapshot while the instructions are read", func() { s.Snapshot() })
	gate.open()
	if got := h.settled(r.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("run: %+v", got)
	}
}

// Events used to go through one process-wide lock, held while the event
// was built and while every subscriber ran: a subscriber busy with one
// session's state (encoding a long history) stalled every other session's
// commands, since each publishes its state before it returns.
func TestSetPinnedDoesNotWaitForAnotherSessionsEvents(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	a, b := h.newSession(), h.newSession()
	entered := make(chan struct{})
	unblock := make(chan struct{})
	var once sync.Once
	h.e.Subscribe(func(ev engine.Event) {
		if ev.Kind == engine.EventState && ev.SessionID == a.ID() {
			once.Do(func() {
				close(entered)
				<-unblock
			})
		}
	})
	pinnedA := make(chan error, 1)
	go func() {
		_, err := a.SetPinned(true)
		pinnedA <- err
	}()
	select {
	case <-entered:
	case <-time.After(watchdog):
		t.Fatal("no state event for the pinned session")
	}
	returns(t, "SetPinned of another session", func() {
		if at, err := b.SetPinned(true); err != nil || at == nil {
			t.Errorf("pin: %v %v", at, err)
		}
	})
	returns(t, "Snapshot of the session whose event is being delivered", func() { a.Snapshot() })
	close(unblock)
	if err := <-pinnedA; err != nil {
		t.Fatal(err)
	}
}
