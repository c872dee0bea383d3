package engine_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// The run reads a.txt, then the gate (a named pipe that holds the read
// until the test lets it go), in one reply's two tool calls.
const twoReadsScript = `{"turns":[
 {"steps":[{"toolCall":{"id":"c1","name":"read","arguments":{"path":"a.txt"}}},{"toolCall":{"id":"c2","name":"bash","arguments":{"command":"cat gate.txt"}}}]},
 {"steps":[{"text":"done"}]}
]}`

// copyTree copies the files under src to dst, as the disk holds them at
// that instant: what a process killed then leaves behind (kill -9 loses
// nothing written, only what was never written).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil // the gate's pipe, a trace's lock
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// crashedCopy starts a run whose second tool call blocks, and returns a
// data root holding what the disk held at that instant, with a script
// for the next process, and the run's id and session's id.
func crashedCopy(t *testing.T, nextScript string) (root, workspaceID, sessionID, runID string) {
	h := newHarness(t, twoReadsScript)
	s := h.newSession()
	if _, err := s.SetPermission("full-access"); err != nil {
		t.Fatal(err)
	}
	cwd := s.Cwd()
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("alpha"), 0o600); err != nil {
		t.Fatal(err)
	}
	gate := newFIFOGate(t, filepath.Join(cwd, "gate.txt"), "gamma")
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "read both"})
	if err != nil {
		t.Fatal(err)
	}
	gate.waitOpened(t) // the second call runs: its start is journaled
	root = filepath.Join(t.TempDir(), "crashed")
	copyTree(t, h.root, root)
	gate.open()
	h.settled(res.RunID)
	if err := os.WriteFile(filepath.Join(root, "script.json"), []byte(nextScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, h.ws, s.ID(), res.RunID
}

func TestARunCutByACrashIsCommittedAsInterruptedWhenItsSessionIsOpenedAgain(t *testing.T) {
	root, ws, id, runID := crashedCopy(t, `{"turns":[{"steps":[{"text":"resumed"}]}]}`)
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	settled := make(chan *engine.AgentSettledEvent, 4)
	e.Subscribe(func(ev engine.Event) {
		if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok {
			settled <- p
		}
	})
	// The draft's first prompt made the session exist: it lists before
	// any process opened it, and opens by id.
	if list, err := e.List(ws, false); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("the crashed draft before an open: list %+v %v", list, err)
	}
	s, err := e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-settled:
		if p.RunID != runID || p.RequestID != "r1" || p.Outcome != engine.OutcomeInterrupted {
			t.Fatalf("settled %+v", p)
		}
	default:
		t.Fatal("opening the session published no settlement of the recovered run")
	}
	st := s.Snapshot().State
	msgs := st.Messages
	if len(msgs) != 4 || msgs[0].Role != convo.RoleUser || msgs[1].Role != convo.RoleAssistant ||
		!strings.Contains(msgs[2].Text(), "alpha") || msgs[2].IsError || !msgs[3].IsError || msgs[3].Text() != store.InterruptedStartedText {
		t.Fatalf("recovered history %+v", msgs)
	}
	// The prompt is recovered as the history held it: with the context
	// blocks (date, permission) the model was sent.
	ctxBlocks := 0
	for _, b := range msgs[0].Content {
		if b.Attachment == convo.AttachmentContext {
			ctxBlocks++
		}
	}
	if ctxBlocks == 0 {
		t.Fatalf("the recovered prompt lost its context blocks: %+v", msgs[0].Content)
	}
	if st.Recovered == nil || st.Recovered.RunID != runID || st.Recovered.Messages != 4 || !st.CanResume || !st.Unread {
		t.Fatalf("state: recovered %+v canResume %v unread %v", st.Recovered, st.CanResume, st.Unread)
	}
	if len(st.PromptTimings) != 1 || !st.PromptTimings[0].Interrupted || st.PromptTimings[0].ID != runID {
		t.Fatalf("timings %+v", st.PromptTimings)
	}
	list, err := e.List(s.WorkspaceID(), false)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list %+v %v", list, err)
	}

	// The draft's first request id was durable before its answer: a
	// retry answers the recovered run and runs nothing; other content is
	// a conflict.
	retry, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "read both"})
	if err != nil || retry.RunID != runID {
		t.Fatalf("retry of the recovered run's request id: %+v %v", retry, err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "something else"}); engine.CodeOf(err) != engine.CodeRequestConflict {
		t.Fatalf("retry with other content: %v", err)
	}
	if n := s.Snapshot().State.MessageCount; n != 4 {
		t.Fatalf("a retry ran: %d messages", n)
	}

	// session/resume continues the task: the model sees the results.
	res, err := s.Resume()
	if err != nil {
		t.Fatal(err)
	}
	var p *engine.AgentSettledEvent
	for p = range settled {
		if p.RunID == res.RunID {
			break
		}
	}
	if p.Outcome != engine.OutcomeCompleted {
		t.Fatalf("resume %+v", p)
	}
	st = s.Snapshot().State
	if st.Recovered != nil || st.CanResume || st.Messages[len(st.Messages)-1].Text() != "resumed" {
		t.Fatalf("after resume: recovered %+v canResume %v", st.Recovered, st.CanResume)
	}
}

func TestASessionWhoseFirstRunACrashCutGetsItsFallbackTitleWhenOpenedAgain(t *testing.T) {
	root, ws, id, _ := crashedCopy(t, `{"turns":[]}`)
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	s, err := e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Snapshot().State; st.Title != "read both" || st.TitleSource != store.TitleAuto {
		t.Fatalf("title after the recovery: %q (%s), want the first prompt's, auto", st.Title, st.TitleSource)
	}
	list, err := e.List(ws, false)
	if err != nil || len(list) != 1 || list[0].Title != "read both" {
		t.Fatalf("list after the recovery: %+v %v", list, err)
	}
}

func TestNoToolRunsWhenItsStartCannotBeJournaled(t *testing.T) {
	h := newHarness(t, `{"turns":[
 {"steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"ran.txt","content":"x"}}}]},
 {"steps":[{"text":"done"}]}
]}`)
	s, err := h.e.CreateSession(h.ws, engine.SessionOptions{Permission: "full-access"})
	if err != nil {
		t.Fatal(err)
	}
	// journal.jsonl cannot be a file: the run's journal cannot start.
	dir := filepath.Join(h.root, "sessions", h.ws, s.ID())
	if err := os.Mkdir(filepath.Join(dir, "journal.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "write"})
	if err != nil {
		t.Fatal(err)
	}
	p := h.settled(res.RunID)
	if p.Outcome != engine.OutcomeError || p.Error == nil || p.Error.Code != engine.CodeStorageError || !strings.Contains(p.Error.Message, "journal") {
		t.Fatalf("settled %+v %+v", p, p.Error)
	}
	if _, err := os.Stat(filepath.Join(s.Cwd(), "ran.txt")); !os.IsNotExist(err) {
		t.Fatalf("the tool ran without a journal: %v", err)
	}
	// The run is committed as any run's end: the prompt, the reply, the
	// call's error result saying it did not run.
	st := s.Snapshot().State
	if st.MessageCount != 3 || !st.Messages[2].IsError || !strings.Contains(st.Messages[2].Text(), "did not run") {
		t.Fatalf("committed %d messages: %+v", st.MessageCount, st.Messages)
	}
}

func TestACompletedRunLeavesNothingToRecover(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"hi"}]}]}`)
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	journal := filepath.Join(h.root, "sessions", h.ws, s.ID(), "journal.jsonl")
	if fi, err := os.Stat(journal); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after the commit: %v %v", fi, err)
	}
	id := s.ID()
	h.restart()
	s2, err := h.e.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Snapshot().State; st.Recovered != nil || len(st.PromptTimings) != 1 || st.PromptTimings[0].Interrupted {
		t.Fatalf("a completed run was recovered: %+v", st.Recovered)
	}
}
