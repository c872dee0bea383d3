package store

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/loopdev/loop/convo"
)

// TestResponsesReasoningItemsSurviveReopenExportAndImport: a reasoning
// item of the OpenAI Responses API (a thinking block with an id and its
// encrypted content as signature, docs/storage.md) is written as one
// block, read back whole by a new Root (another process), and kept by the
// JSON export and its import.
func TestResponsesReasoningItemsSurviveReopenExportAndImport(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	msgs := []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1, Content: []convo.Block{{Type: convo.BlockText, Text: "hi"}}},
		{Role: convo.RoleAssistant, Timestamp: 2, Provider: "oa", Model: "gpt-r", StopReason: convo.StopEnd, Content: []convo.Block{
			{Type: convo.BlockThinking, Text: "Greeting back.", ID: "rs_1", Signature: "gAAAA-enc"},
			{Type: convo.BlockThinking, ID: "rs_2", Signature: "gAAAA-no-summary"},
			{Type: convo.BlockText, Text: "Hello."},
		}},
	}
	mustCommit(t, s, msgs, nil, nil)
	id := s.ID()
	s.Close()

	again, err := OpenRoot(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := again.Open("", id)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := s2.Messages(); !reflect.DeepEqual(got[1].Content, msgs[1].Content) {
		t.Fatalf("reopened: %+v\nwant %+v", got[1].Content, msgs[1].Content)
	}
	data := exportOf(t, s2)
	if !bytes.Contains(data, []byte(`{"type":"thinking","text":"Greeting back.","signature":"gAAAA-enc","id":"rs_1"}`)) {
		t.Errorf("the export does not hold the reasoning item:\n%s", data)
	}
	imp, err := ParseExport(data, "/x/export.json")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newTestRoot(t)
	got, _, err := other.Import(&imp, Checksum(data), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if gm := got.Messages(); !reflect.DeepEqual(gm[1].Content, msgs[1].Content) {
		t.Errorf("imported: %+v", gm[1].Content)
	}
}
