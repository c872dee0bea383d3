package acp

import (
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// A prompt timing naming a range far past the history (an imported or
// damaged session: timings.jsonl is only checked for non-negative
// indexes) costs session/load no more than the history: the replay's
// message ids walk only the history's own indexes. Before, a range of
// 2^62 messages was walked, one map entry each.
func TestReplayMessageIDsWalkOnlyTheHistoryWhateverTheTimingsSay(t *testing.T) {
	snap := &engine.Snapshot{SessionID: "s"}
	snap.State.Messages = []convo.Message{{Role: convo.RoleUser}, {Role: convo.RoleAssistant}}
	snap.State.PromptTimings = []store.PromptTiming{
		{ID: "run", MessageStartIndex: store.Some(0), MessageEndIndex: store.Some(1 << 62)},
		{ID: "neg", MessageStartIndex: store.Some(-5), MessageEndIndex: store.Some(-1)},
	}
	ids := messageIDs(snap)
	for i, want := range []string{"run/0", "run/1"} {
		if got := ids(i); got != want {
			t.Errorf("message %d: id %q, want %q", i, got, want)
		}
	}
}
