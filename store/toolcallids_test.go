package store

import (
	"slices"
	"testing"

	"github.com/loopdev/loop/convo"
)

func callMsg(ids ...string) convo.Message {
	m := convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockText, Text: "calling"}}}
	for _, id := range ids {
		m.Content = append(m.Content, convo.Block{Type: convo.BlockToolCall, ID: id, Name: "read"})
	}
	return m
}

func resultMsg(id string) convo.Message {
	return convo.Message{Role: convo.RoleToolResult, ToolCallID: id, ToolName: "read"}
}

// published is the history with the unique ids in place of the provider's.
func published(hist []convo.Message) []convo.Message {
	var t ToolCallIDs
	for i := range hist {
		t.Add(&hist[i])
	}
	out := make([]convo.Message, len(hist))
	for i, m := range hist {
		m.Content = slices.Clone(m.Content)
		out[i] = m
	}
	PublishIDs(out, 0, t.Renamed())
	return out
}

// callIDsOf lists the published call and result ids of a history, in order.
func callIDsOf(msgs []convo.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == convo.RoleToolResult {
			out = append(out, "result "+m.ToolCallID)
		}
		for _, b := range m.Content {
			if b.Type == convo.BlockToolCall {
				out = append(out, "call "+b.ID)
			}
		}
	}
	return out
}

func TestToolCallIDsAreUniqueWhenTheProviderNumbersEveryReplyAfresh(t *testing.T) {
	hist := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "go"}}},
		callMsg("call_1", "call_2"), resultMsg("call_1"), resultMsg("call_2"),
		callMsg("call_1"), resultMsg("call_1"),
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}},
		callMsg("call_1", "call_2"), resultMsg("call_1"), resultMsg("call_2"),
	}
	got := callIDsOf(published(hist))
	want := []string{
		"call call_1", "call call_2", "result call_1", "result call_2",
		"call call_1-2", "result call_1-2",
		"call call_1-3", "call call_2-2", "result call_1-3", "result call_2-2",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ids:\n got %q\nwant %q", got, want)
	}
	// The history itself keeps the provider's ids: the model gets them back.
	if hist[4].Content[1].ID != "call_1" || hist[5].ToolCallID != "call_1" {
		t.Fatalf("the history was changed: %+v %+v", hist[4], hist[5])
	}
}

func TestToolCallIDsKeepTheProvidersWhenTheyAreUnique(t *testing.T) {
	hist := []convo.Message{callMsg("toolu_a", "toolu_b"), resultMsg("toolu_a"), resultMsg("toolu_b"), callMsg("toolu_c"), resultMsg("toolu_c")}
	var tc ToolCallIDs
	for i := range hist {
		tc.Add(&hist[i])
	}
	if r := tc.Renamed(); len(r) != 0 {
		t.Fatalf("unique provider ids were renamed: %+v", r)
	}
}

// A provider id that looks like a derived one, a call repeated inside one
// reply, a call without an id and a result that answers no call: every id
// is still given once.
func TestToolCallIDsStayUniqueAgainstLookalikesAndOrphans(t *testing.T) {
	hist := []convo.Message{
		callMsg("x", "x"), resultMsg("x"), resultMsg("x"),
		callMsg("x-2"), resultMsg("x-2"),
		resultMsg("x"),
		callMsg("", ""), resultMsg(""), resultMsg(""),
		callMsg("call"), resultMsg("call"),
	}
	got := callIDsOf(published(hist))
	want := []string{
		"call x", "call x-2", "result x", "result x-2",
		"call x-2-2", "result x-2-2",
		"result x-3",
		"call call", "call call-2", "result call", "result call-2",
		"call call-3", "result call-3",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ids:\n got %q\nwant %q", got, want)
	}
	seen := map[string]bool{}
	for _, s := range got {
		if len(s) > 5 && s[:5] == "call " {
			if seen[s] {
				t.Fatalf("%s given twice", s)
			}
			seen[s] = true
		}
	}
}

// A reply still streaming shows the ids its calls get once it is in the
// history, and a history loaded again gets the ids it had live.
func TestToolCallIDsOfADraftAreThoseItGetsWhenAdded(t *testing.T) {
	hist := []convo.Message{callMsg("call_1", "call_2"), resultMsg("call_1"), resultMsg("call_2")}
	var live ToolCallIDs
	for i := range hist {
		live.Add(&hist[i])
	}
	next := callMsg("call_2", "call_1", "call_2")
	d := live.Draft()
	for b, blk := range next.Content {
		if blk.Type == convo.BlockToolCall {
			d.Name(b, blk.ID)
		}
	}
	draft := slices.Clone(d.IDs())
	live.Add(&next)
	pub := []convo.Message{next}
	pub[0].Content = slices.Clone(next.Content)
	PublishIDs(pub, len(hist), live.Renamed())
	for b := range next.Content {
		if draft[b] != "" && draft[b] != pub[0].Content[b].ID || draft[b] == "" && next.Content[b].Type == convo.BlockToolCall {
			t.Fatalf("block %d: draft id %q, added %q", b, draft[b], pub[0].Content[b].ID)
		}
	}
	if got := callIDsOf(pub); !slices.Equal(got, []string{"call call_2-2", "call call_1-2", "call call_2-3"}) {
		t.Fatalf("ids %q", got)
	}

	reloaded := published(append(slices.Clone(hist), next))
	if got := callIDsOf(reloaded[len(hist):]); !slices.Equal(got, callIDsOf(pub)) {
		t.Fatalf("reloaded ids %q, live %q", got, callIDsOf(pub))
	}
}

// Blocks that open out of order are named in block order, as the added
// message will be.
func TestToolCallIDsOfADraftWhoseBlocksOpenOutOfOrder(t *testing.T) {
	var live ToolCallIDs
	first := callMsg("a")
	live.Add(&first)
	d := live.Draft()
	d.Name(3, "a")
	if got := d.Name(1, "a"); got != "a-2" {
		t.Fatalf("block 1 named %q, want a-2", got)
	}
	if got := d.IDs(); got[1] != "a-2" || got[3] != "a-3" {
		t.Fatalf("ids %q", got)
	}
}

// BenchmarkDraftOfOneReplyOfManyCallsWithOneID: a reply of thousands of
// calls that all carry one id (a hostile or broken provider) is named as
// it streams, a call at a time, in time linear in the calls.
func BenchmarkDraftOfOneReplyOfManyCallsWithOneID(b *testing.B) {
	var live ToolCallIDs
	first := callMsg("call_1")
	live.Add(&first)
	for b.Loop() {
		d := live.Draft()
		for k := range 4096 {
			d.Name(k, "call_1")
		}
	}
}
