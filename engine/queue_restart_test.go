package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// exitAndStart ends the harness's engine as a process that exits while it
// still has work does (Shutdown in Abort mode: the running run stops,
// queued inputs are left), and starts a new engine on the same data root:
// the next process.
func (h *harness) exitAndStart() {
	h.t.Helper()
	if err := h.e.Shutdown(context.Background(), engine.Abort); err != nil {
		h.t.Fatal(err)
	}
	h.start()
}

// queueFile is session id's queue.json (docs/storage.md).
func (h *harness) queueFile(id string) string {
	return filepath.Join(h.root, "sessions", h.ws, id, "queue.json")
}

// Queued inputs come back, held, in the next process, with their ids, run
// ids, text and attachments, so that nothing runs that the user has not
// seen again: a new prompt runs past them; cancel-edit releases one,
// which then runs under its original run id; delete drops one; and the
// next process finds neither.
func TestQueuedInputsComeBackHeldAfterARestart(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"zero"}]},{"steps":[{"waitFile":"g1"},{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r0", "saved first") // the session is on disk now
	_, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "running"})
	if err != nil {
		t.Fatal(err)
	}
	img := engine.Image{Type: "image", Data: "iVBORw0KGgo=", MimeType: "image/png"}
	second, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "second <&>", Images: []engine.Image{img}, Files: []engine.File{{Name: "a.go", Text: "package a\n"}}})
	if err != nil || !second.Queued {
		t.Fatalf("second: %+v, %v", second, err)
	}
	third, err := s.Prompt(engine.PromptInput{RequestID: "r3", Text: "third"})
	if err != nil || !third.Queued {
		t.Fatalf("third: %+v, %v", third, err)
	}
	if _, err := s.Queue(engine.QueueAction{ID: "r3", Action: engine.QueueSteer}); err != nil {
		t.Fatal(err)
	}
	want := s.Snapshot().State.Queue
	h.exitAndStart()
	if err := os.WriteFile(filepath.Join(h.root, "g1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	got := s.Snapshot().State.Queue
	if len(got) != 2 {
		t.Fatalf("queue after the restart: %+v", got)
	}
	for i := range got {
		if !got[i].Held || got[i].HoldID == "" {
			t.Fatalf("item %q is not held: %+v", got[i].ID, got[i])
		}
		w := want[i]
		w.Held, w.HoldID = got[i].Held, got[i].HoldID
		if !reflect.DeepEqual(got[i], w) {
			t.Fatalf("item %d after the restart:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
	if got[0].RunID != second.RunID || got[1].RunID != third.RunID || !got[1].Steer {
		t.Fatalf("run ids or steer mark lost: %+v", got)
	}
	if ids := s.Snapshot().State.AcceptedRequestIDs; !slices.Equal(ids, []string{"r0", "r1", "r2", "r3"}) {
		t.Fatalf("accepted request ids %v", ids)
	}

	// A new prompt runs; the held inputs stay.
	if st := h.prompt(s, "r4", "new"); st.Outcome != engine.OutcomeCompleted {
		t.Fatalf("new prompt: %+v", st)
	}
	if q := s.Snapshot().State.Queue; len(q) != 2 || !q[0].Held || !q[1].Held {
		t.Fatalf("a held input ran: %+v", q)
	}
	// A holdId that is not the restart's is refused, as for any hold.
	if _, err := s.Queue(engine.QueueAction{ID: "r2", Action: engine.QueueCancelEdit, HoldID: "other"}); engine.CodeOf(err) != engine.CodeQueueConflict {
		t.Fatalf("cancel-edit with another holdId: %v", err)
	}
	if _, err := s.Queue(engine.QueueAction{ID: "r3", Action: engine.QueueDelete}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queue(engine.QueueAction{ID: "r2", Action: engine.QueueCancelEdit}); err != nil {
		t.Fatal(err)
	}
	if st := h.settled(second.RunID); st.Outcome != engine.OutcomeCompleted || st.RequestID != "r2" {
		t.Fatalf("released input: %+v", st)
	}
	snap := s.Snapshot()
	if len(snap.State.Queue) != 0 {
		t.Fatalf("queue %+v", snap.State.Queue)
	}
	found := false
	for _, m := range snap.State.Messages {
		found = found || m.RequestID == "r2" && len(m.Content) == 3 && m.Content[0].Text == "second <&>"
	}
	if !found {
		t.Fatal("the released input's message, with its attachments, is not in the history")
	}

	h.restart()
	s, err = h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if q := s.Snapshot().State.Queue; len(q) != 0 {
		t.Fatalf("the deleted and the sent input came back: %+v", q)
	}
}

// A request id the session accepted is known to the next process: the
// same content answers the original run id and runs nothing, other
// content is request_conflict. It holds for a queued input too.
func TestRetriedRequestIDAfterARestartAnswersTheOriginalRun(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]}]}`)
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hello", Files: []engine.File{{Name: "n.txt", Text: "note"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	h.restart()
	s, err = h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot().State.MessageCount
	requests := len(h.requests())

	again, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hello", Files: []engine.File{{Name: "n.txt", Text: "note"}}})
	if err != nil {
		t.Fatal(err)
	}
	if again.RunID != res.RunID || again.Queued {
		t.Fatalf("retry after the restart answered %+v, want run %s", again, res.RunID)
	}
	snap := s.Snapshot()
	if snap.RunID != "" || snap.State.MessageCount != before || len(snap.State.Queue) != 0 {
		t.Fatalf("the retry ran: run %q, %d messages (had %d), queue %+v", snap.RunID, snap.State.MessageCount, before, snap.State.Queue)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hello, changed"}); engine.CodeOf(err) != engine.CodeRequestConflict {
		t.Fatalf("other content under the same id after the restart: %v", err)
	}
	if n := len(h.requests()); n != requests {
		t.Fatalf("%d model requests after the retry, had %d", n, requests)
	}
}

// A prompt whose queue.json cannot be written (a full disk) is not
// refused: it runs, as a prompt whose commit fails does, and the next
// write that succeeds holds its request id with the rest, so that the
// next process still answers a retry of it with its run.
func TestPromptWhoseQueueCannotBeSavedRunsAndTheNextWriteHoldsIt(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]},{"steps":[{"text":"three"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r0", "first")
	// The temporary file's name taken by a directory fails the write.
	block := h.queueFile(s.ID()) + ".tmp"
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	unsaved := h.prompt(s, "r1", "second")
	if unsaved.Outcome != engine.OutcomeCompleted {
		t.Fatalf("prompt whose queue cannot be written: %+v", unsaved)
	}
	if data, err := os.ReadFile(h.queueFile(s.ID())); err != nil || strings.Contains(string(data), `"r1"`) {
		t.Fatalf("queue.json holds r1 although its write failed: %s, %v", data, err)
	}
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	h.prompt(s, "r2", "third")
	h.restart()
	s, err := h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "second"})
	if err != nil || again.RunID != unsaved.RunID {
		t.Fatalf("retry of the prompt whose write failed: %+v, %v; want run %s", again, err, unsaved.RunID)
	}
}

// A queue.json that cannot be applied (here: damaged) is never applied and
// never replaced: the session opens read-only with an error naming the
// file, its history reads as ever, and prompts are refused.
func TestDamagedQueueFileOpensTheSessionReadOnly(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r0", "first")
	h.restart() // a last write of queue.json, then the lock is free
	path := h.queueFile(s.ID())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte(strings.Replace(string(data), `"r0"`, `"r9"`, 1))
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := h.e.Session(s.ID())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if o.Snapshot().State.MessageCount != 2 {
		t.Fatal("history not read")
	}
	_, err = o.Prompt(engine.PromptInput{RequestID: "r1", Text: "again"})
	if engine.CodeOf(err) != engine.CodeSessionLocked || !strings.Contains(err.Error(), path) {
		t.Fatalf("prompt: %v, want session_locked naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Fatal("the damaged file was replaced")
	}
}

// An input queue.json still lists although its run is in the history (the
// process ended between the run's start and the write that dropped it)
// does not come back: it ran.
func TestRestoredInputWhoseRunIsInTheHistoryIsNotQueuedAgain(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"one"}]}]}`)
	s := h.newSession()
	ran := h.prompt(s, "r0", "first")
	h.restart()
	st, err := store.OpenRoot(h.root)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.Open(h.ws, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	q := ss.StoredQueue()
	q.Items = []store.QueuedInput{
		{ID: "r0", RunID: ran.RunID, Text: "first", QueuedAt: 1},
		{ID: "r1", RunID: "01a2349a-0000-7000-8000-000000000001", Text: "waiting", QueuedAt: 2},
	}
	if err := ss.SaveQueue(&q); err != nil {
		t.Fatal(err)
	}
	ss.Close()

	s, err = h.e.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().State.Queue; len(got) != 1 || got[0].ID != "r1" || !got[0].Held {
		t.Fatalf("queue %+v, want r1 alone, held", got)
	}
}

// A process that opened a session while another wrote it sees none of
// that writer's queue (it is the writer's); once the writer has exited,
// the session it takes over gives the writer's queued inputs back, held.
func TestQueueOfAProcessThatExitedComesBackHeldToTheOneThatTakesOver(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"zero"}]},{"steps":[{"waitFile":"g1"},{"text":"one"}]},{"steps":[{"text":"two"}]}]}`)
	writer := h.otherProcess()
	ws := h.newSavedSession(t, writer)
	if _, err := ws.Prompt(engine.PromptInput{RequestID: "r1", Text: "running"}); err != nil {
		t.Fatal(err)
	}
	queued, err := ws.Prompt(engine.PromptInput{RequestID: "r2", Text: "waiting"})
	if err != nil || !queued.Queued {
		t.Fatalf("%+v, %v", queued, err)
	}
	// The writer stops its run (its queue waits, paused) and stays: this
	// process opens the session as the writer left it, read-only.
	if _, err := ws.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := h.e.Session(ws.ID())
	if err != nil {
		t.Fatal(err)
	}
	if q := s.Snapshot().State.Queue; len(q) != 0 {
		t.Fatalf("the live writer's queue shows in another process: %+v", q)
	}
	if err := writer.e.Shutdown(context.Background(), engine.Abort); err != nil {
		t.Fatal(err)
	}
	writer.e = nil

	// The same instance takes the lock, and the queue, in place.
	again, err := h.e.Session(ws.ID())
	if err != nil || again != s {
		t.Fatalf("taking the session over: %v (same instance %v)", err, again == s)
	}
	q := s.Snapshot().State.Queue
	if len(q) != 1 || q[0].ID != "r2" || q[0].RunID != queued.RunID || !q[0].Held {
		t.Fatalf("queue after taking the session over: %+v", q)
	}
}
