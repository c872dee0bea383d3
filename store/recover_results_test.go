package store

import (
	"testing"

	"github.com/loopdev/loop/convo"
)

// A recovery answers each call that has no result, whatever the order the
// results came in: a call answered out of order is not answered twice and
// the one left is not left unanswered.
func TestARecoveryAnswersTheCallsWithoutAResultByTheirID(t *testing.T) {
	zero := 0
	call := func(id string) convo.Block {
		return convo.Block{Type: convo.BlockToolCall, ID: id, Name: "read"}
	}
	run := &journalRun{
		begin: journalRecord{MessageCount: &zero},
		msgs: []convo.Message{
			{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "go"}}},
			{Role: convo.RoleAssistant, Content: []convo.Block{call("c1"), call("c2"), call("c3")}},
			{Role: convo.RoleToolResult, ToolCallID: "c2", Content: []convo.Block{{Type: convo.BlockText, Text: "two"}}},
		},
		started: map[[2]int]bool{{1, 0}: true, {1, 1}: true},
	}
	got := interruptedResults(run)
	if len(got) != 2 || got[0].ToolCallID != "c1" || got[1].ToolCallID != "c3" {
		t.Fatalf("results for %+v", got)
	}
	if got[0].Text() != InterruptedStartedText || got[1].Text() != InterruptedUnrunText {
		t.Fatalf("texts %q, %q", got[0].Text(), got[1].Text())
	}
}
