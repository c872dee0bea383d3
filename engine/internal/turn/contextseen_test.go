package turn

import (
	"reflect"
	"testing"

	"github.com/loopdev/loop/convo"
)

// What a prompt must carry is found from the messages added since the
// last prompt, not by reading the whole history again, and it is what
// reading the whole history finds.
func TestContextSeenReadsOnlyWhatTheHistoryAdded(t *testing.T) {
	user := func(parts ...convo.Block) convo.Message {
		return convo.Message{Role: convo.RoleUser, Content: append(parts, convo.Block{Type: convo.BlockText, Text: "hi"})}
	}
	answer := convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockText, Text: "ok"}}}
	day1 := []convo.Block{contextBlock(ContextDate, "Today: 2026-12-01"), contextBlock(ContextPermission, "read-only")}
	day2 := []convo.Block{contextBlock(ContextDate, "Today: 2026-12-02"), contextBlock(ContextPermission, "read-only")}
	var seen ContextSeen
	var hist []convo.Message
	for i, current := range [][]convo.Block{day1, day1, day2, day2} {
		got, want := seen.Changes(hist, current), ContextChanges(hist, current)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("prompt %d: %+v, reading the whole history: %+v", i, got, want)
		}
		hist = append(hist, user(got...), answer)
	}
	// The messages already read are not read again: a change to them
	// (which a history that only grows never has) goes unseen.
	hist[0].Content[0].Text = "Today: 1999-01-01"
	if got := seen.Changes(hist, day2); len(got) != 0 {
		t.Fatalf("read the history again: %+v", got)
	}
}
