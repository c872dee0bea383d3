package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// breakSaves makes the session's next commits fail (the header's temporary
// file name is taken by a directory) and returns the repair.
func (h *harness) breakSaves(s *engine.Session) (repair func()) {
	h.t.Helper()
	tmp := filepath.Join(h.root, "sessions", h.ws, s.ID(), "header.json.tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "blocker"), 0o700); err != nil {
		h.t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(tmp); err != nil {
			h.t.Fatal(err)
		}
	}
}

// prompt sends text and waits for the run to settle.
func (h *harness) prompt(s *engine.Session, id, text string) *engine.AgentSettledEvent {
	h.t.Helper()
	res, err := s.Prompt(engine.PromptInput{RequestID: id, Text: text})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.settled(res.RunID)
}

// reopen shuts the engine down, starts a new one and opens session id.
func (h *harness) reopen(id string) *engine.Session {
	h.t.Helper()
	h.restart()
	s, err := h.e.Session(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func TestEditingASnapshotsTimingsDoesNotChangeWhatFlushWrites(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	repair := h.breakSaves(s)
	if got := h.prompt(s, "r2", "two"); got.Error == nil || got.Error.Code != engine.CodeStorageError {
		t.Fatalf("want storage_error, got %+v", got)
	}
	snap := s.Snapshot()
	if !snap.State.HasPendingSave || len(snap.State.PromptTimings) != 2 {
		t.Fatalf("want a pending save with 2 timings: %+v", snap.State)
	}
	want := snap.State.PromptTimings[1].FinishedAt
	wantEnd := snap.State.PromptTimings[1].MessageEndIndex
	for i := range snap.State.PromptTimings {
		tm := &snap.State.PromptTimings[i]
		tm.FinishedAt, tm.MessageStartIndex, tm.MessageEndIndex = store.Some(int64(1)), store.Some(99), store.Some(99)
	}
	repair()
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, st := range []engine.State{s.Snapshot().State, h.reopen(s.ID()).Snapshot().State} {
		tm := st.PromptTimings[1]
		if tm.FinishedAt != want || tm.MessageEndIndex != wantEnd || tm.MessageStartIndex != store.Some(2) {
			t.Fatalf("an edited snapshot changed the saved timing: %+v", tm)
		}
	}
}

func TestEditingASnapshotDoesNotChangeTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"steps":[{"toolCall":{"name":"ls","arguments":{"path":"."}}}]},
		{"steps":[{"text":"done"}]},
		{"steps":[{"error":"boom"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	if got := h.prompt(s, "r2", "two"); got.Error == nil {
		t.Fatalf("want a model error: %+v", got)
	}
	before := s.Snapshot()
	if before.State.LastError == nil || before.ModelInfo == nil || len(before.ModelInfo.Efforts) == 0 {
		t.Fatalf("unexpected snapshot: %+v", before)
	}
	want, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	for i := range snap.State.Messages {
		m := &snap.State.Messages[i]
		for j := range m.Content {
			m.Content[j].Text = "EDITED"
			for k := range m.Content[j].Arguments {
				m.Content[j].Arguments[k] = ' '
			}
		}
		if m.Usage != nil {
			m.Usage.Input = -1
		}
	}
	snap.State.LastError.Message = "EDITED"
	snap.ModelInfo.Efforts[0] = "EDITED"
	for i := range snap.State.PromptTimings {
		snap.State.PromptTimings[i].FinishedAt = store.Some(int64(1))
	}
	got, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("editing a snapshot changed the session:\nwas %s\nnow %s", want, got)
	}
	if m := h.e.Models(); m[0].Efforts[0] == "EDITED" {
		t.Fatalf("the catalog changed: %+v", m[0])
	}
	models := h.e.Models()
	models[0].Efforts[0] = "EDITED"
	if m := h.e.Models(); m[0].Efforts[0] == "EDITED" {
		t.Fatalf("Models shares the catalog: %+v", m[0])
	}
}

func TestEditingPendingSaveDoesNotChangeWhatFlushWrites(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	repair := h.breakSaves(s)
	h.prompt(s, "r2", "two")
	msgs, err := s.PendingSave()
	if err == nil || len(msgs) != 4 {
		t.Fatalf("want 4 pending messages and the save error: %d %v", len(msgs), err)
	}
	for i := range msgs {
		for j := range msgs[i].Content {
			msgs[i].Content[j].Text = "EDITED"
		}
	}
	repair()
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	st := h.reopen(s.ID()).Snapshot().State
	if st.MessageCount != 4 || st.Messages[2].Text() != "two" || st.Messages[3].Text() != "a2" {
		t.Fatalf("an edited PendingSave changed what flush wrote: %+v", st.Messages)
	}
}

// editor is a host that edits every payload it receives.
func editPayload(ev engine.Event) {
	switch p := ev.Payload.(type) {
	case *engine.MessageEvent:
		if p.Message != nil {
			for j := range p.Message.Content {
				p.Message.Content[j].Text = "EDITED"
				for k := range p.Message.Content[j].Arguments {
					p.Message.Content[j].Arguments[k] = ' '
				}
			}
		}
	case *engine.ToolEvent:
		for k := range p.Input {
			p.Input[k] = ' '
		}
		for j := range p.Result {
			p.Result[j].Text = "EDITED"
		}
	case *engine.PromptTimingEvent:
		if p.Timing.FinishedAt.Set {
			p.Timing.FinishedAt.Value = 1
		}
		if p.Timing.MessageStartIndex.Set {
			p.Timing.MessageStartIndex.Value = 99
		}
		if p.Timing.MessageEndIndex.Set {
			p.Timing.MessageEndIndex.Value = 99
		}
	case *engine.StateEvent:
		if e := p.Snapshot().State.LastError; e != nil {
			e.Message = "EDITED"
		}
	}
}

func TestEditingEventPayloadsDoesNotChangeTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[
		{"steps":[{"toolCall":{"name":"ls","arguments":{"path":"."}}}]},
		{"steps":[{"text":"done"}]}]}`)
	h.e.Subscribe(editPayload)
	s := h.newSession()
	if got := h.prompt(s, "r1", "one"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("run: %+v", got.Error)
	}
	check := func(st engine.State) {
		t.Helper()
		if len(st.Messages) != 4 || st.Messages[0].Text() != "one" || st.Messages[3].Text() != "done" {
			t.Fatalf("history changed through an event: %+v", st.Messages)
		}
		if args := string(st.Messages[1].Content[0].Arguments); args != `{"path":"."}` {
			t.Fatalf("tool call arguments changed through an event: %q", args)
		}
		if st.Messages[2].Role != convo.RoleToolResult || st.Messages[2].Content[0].Text == "EDITED" {
			t.Fatalf("tool result changed through an event: %+v", st.Messages[2])
		}
		tm := st.PromptTimings[0]
		if tm.MessageStartIndex != store.Some(0) || tm.MessageEndIndex != store.Some(4) || tm.FinishedAt.Value == 1 {
			t.Fatalf("timing changed through an event: %+v", tm)
		}
	}
	check(s.Snapshot().State)
	check(h.reopen(s.ID()).Snapshot().State)
}

func TestQueuedPromptKeepsItsOwnAttachments(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"waitFile":"go"},{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	first, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	files := []engine.File{{Name: "a.txt", Text: "original"}}
	skills := []string{}
	res, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "two", Files: files, Skills: skills})
	if err != nil || !res.Queued {
		t.Fatalf("want queued: %+v %v", res, err)
	}
	files[0].Text = "EDITED"
	if q := s.Snapshot().State.Queue; len(q) != 1 || q[0].Files[0].Text != "original" {
		t.Fatalf("the queue shares the caller's slice: %+v", q)
	}
	if err := os.WriteFile(filepath.Join(h.root, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.settled(first.RunID)
	h.settled(res.RunID)
	if m := s.Snapshot().State.Messages[2]; len(m.Content) != 2 || !strings.Contains(m.Content[1].Text, "original") {
		t.Fatalf("the queued prompt ran with edited content: %+v", m)
	}
}
