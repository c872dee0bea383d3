package engine_test

import (
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

func sinceCounts(snap *engine.Snapshot) (msgs, msgsFrom, timings, timingsFrom int) {
	st := snap.State
	return len(st.Messages), st.MessagesFrom, len(st.PromptTimings), st.PromptTimingsFrom
}

// SnapshotSince copies what a client lacks: nothing it was sent before,
// except after the session was closed and opened again, when its history
// is read anew and the earlier counts prove nothing.
func TestSnapshotSinceSendsOnlyWhatIsNewUntilTheSessionIsReopened(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]},{"steps":[{"text":"a3"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	snap, held := s.SnapshotSince(engine.Held{}, true)
	if m, mf, tm, tf := sinceCounts(snap); m != 2 || mf != 0 || tm != 1 || tf != 0 {
		t.Fatalf("first snapshot: %d messages from %d, %d timings from %d", m, mf, tm, tf)
	}
	h.prompt(s, "r2", "two")
	snap, held = s.SnapshotSince(held, true)
	if m, mf, tm, tf := sinceCounts(snap); m != 2 || mf != 2 || tm != 1 || tf != 1 {
		t.Fatalf("after a prompt: %d messages from %d, %d timings from %d", m, mf, tm, tf)
	}
	if snap.State.Messages[0].Content[0].Text != "two" {
		t.Fatalf("the delta does not start with the new prompt: %+v", snap.State.Messages[0])
	}
	snap, held = s.SnapshotSince(held, true)
	if m, mf, tm, tf := sinceCounts(snap); m != 0 || mf != 4 || tm != 0 || tf != 2 {
		t.Fatalf("nothing changed: %d messages from %d, %d timings from %d", m, mf, tm, tf)
	}
	s = h.reopen(s.ID())
	snap, _ = s.SnapshotSince(held, true)
	if m, mf, tm, tf := sinceCounts(snap); m != 4 || mf != 0 || tm != 2 || tf != 0 {
		t.Fatalf("reopened: %d messages from %d, %d timings from %d", m, mf, tm, tf)
	}
}

// A timing that was sent unfinished is sent again, until a later one
// finishes (then that run is over and the record stays as it is).
func TestSnapshotSinceSendsAnUnfinishedTimingAgainUntilALaterOneFinishes(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a3"}]}]}`)
	root, err := store.OpenRoot(h.root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := root.CreateWith(h.ws, h.newSession().Cwd(), func(hd *store.Header) { hd.Model = &store.ModelRef{Provider: "fake", ID: "m1"} })
	if err != nil {
		t.Fatal(err)
	}
	msgs := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "one"}}},
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockText, Text: "a1"}}, Provider: "fake", Model: "m1"},
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "two"}}},
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockText, Text: "a2"}}, Provider: "fake", Model: "m1"},
	}
	if err := st.Commit(msgs, nil, nil,
		store.TimingAt{Index: 0, Timing: store.PromptTiming{ID: "p1", MessageStartIndex: store.Some(0), StartedAt: 1, FinishedAt: store.Some(int64(5))}},
		store.TimingAt{Index: 1, Timing: store.PromptTiming{ID: "p2", UserMessageIndex: 1, MessageStartIndex: store.Some(2), StartedAt: 6}}, // never finished
	); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := h.e.Session(st.ID())
	if err != nil {
		t.Fatal(err)
	}
	_, held := s.SnapshotSince(engine.Held{}, true)
	snap, held := s.SnapshotSince(held, true)
	if _, _, tm, tf := sinceCounts(snap); tm != 1 || tf != 1 || snap.State.PromptTimings[0].ID != "p2" {
		t.Fatalf("the unfinished timing is not sent again: %d timings from %d", tm, tf)
	}
	h.prompt(s, "r3", "three")
	snap, held = s.SnapshotSince(held, true)
	if _, _, tm, tf := sinceCounts(snap); tm != 2 || tf != 1 {
		t.Fatalf("after a later prompt: %d timings from %d, want both from 1", tm, tf)
	}
	snap, _ = s.SnapshotSince(held, true)
	if _, _, tm, tf := sinceCounts(snap); tm != 0 || tf != 3 {
		t.Fatalf("once a later timing finished: %d timings from %d, want none from 3", tm, tf)
	}
}

// What SnapshotSince returns is the caller's own copy, as Snapshot's is.
func TestEditingASnapshotSinceDoesNotChangeTheSession(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]}]}`)
	s := h.newSession()
	h.prompt(s, "r1", "one")
	_, held := s.SnapshotSince(engine.Held{}, true)
	h.prompt(s, "r2", "two")
	snap, _ := s.SnapshotSince(held, true)
	snap.State.Messages[0].Content[0].Text = "EDITED"
	snap.State.PromptTimings[0].MessageStartIndex = store.Some(99)
	full := s.Snapshot()
	if full.State.Messages[2].Content[0].Text != "two" || full.State.PromptTimings[1].MessageStartIndex.Value != 2 {
		t.Fatalf("editing a delta changed the session: %+v", full.State)
	}
}
