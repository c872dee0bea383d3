package native

import (
	"testing"

	"github.com/loopdev/loop/convo"
)

// A user message on the wire is what the user sent: the context blocks
// Loop added for the model (convo.AttachmentContext) are left out, and
// the stored message is not changed.
func TestClientMessagesLeaveOutLoopsContextBlocks(t *testing.T) {
	m := convo.Message{Role: convo.RoleUser, Content: []convo.Block{
		{Type: convo.BlockText, Attachment: convo.AttachmentContext, Name: "date", Text: "Today: 2026-03-01"},
		{Type: convo.BlockText, Text: "hello"},
	}}
	got := MessageOf(&m)
	if len(got.Content) != 1 || got.Content[0].Text != "hello" || len(m.Content) != 2 {
		t.Fatalf("wire content %+v, stored %d blocks", got.Content, len(m.Content))
	}
}
