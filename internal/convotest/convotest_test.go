package convotest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// A contract's form of a message, as the disk, wire and trace declare
// theirs: the same Go names, JSON tags, blocks and usage of its own types.
type block struct {
	Type, Text, Signature, Attachment, Data, MimeType, ID, Name string
	Arguments                                                   json.RawMessage
}

type usage struct{ Input, Output, CacheRead, CacheWrite, TotalTokens int }

type message struct {
	Role                                           string
	Content                                        []block
	Timestamp                                      int64
	RequestID                                      string
	Skills                                         []string
	Provider, Model                                string
	Usage                                          *usage
	StopReason, ErrorMessage, ToolCallID, ToolName string
	IsError                                        bool
}

func contractOf(m *convo.Message) message {
	out := message{Role: m.Role, Timestamp: m.Timestamp, RequestID: m.RequestID, Skills: m.Skills,
		Provider: m.Provider, Model: m.Model, Usage: (*usage)(m.Usage), StopReason: m.StopReason,
		ErrorMessage: m.ErrorMessage, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
	for _, b := range m.Content {
		out.Content = append(out.Content, block(b))
	}
	return out
}

func TestMissingFindsNothingInAFaithfulCopy(t *testing.T) {
	m := Message()
	if miss := Missing(m, contractOf(&m)); len(miss) > 0 {
		t.Fatalf("a faithful copy misses %v", miss)
	}
}

// A conversion that forgets a field, or puts one field's value in
// another, is named; a field left out on purpose is not.
func TestMissingNamesTheFieldsAConversionDropped(t *testing.T) {
	m := Message()
	got := contractOf(&m)
	got.ToolName = ""
	got.Content[0].Signature = got.Content[0].Text
	u := *got.Usage // shared with m
	u.CacheRead = 0
	got.Usage = &u
	miss := Missing(m, got, "ToolName")
	var paths []string
	for _, s := range miss {
		paths = append(paths, s[:strings.IndexByte(s, ':')])
	}
	if want := []string{"Content[].Signature", "Usage.CacheRead"}; !slices.Equal(paths, want) {
		t.Fatalf("missing %q, want the paths %q", miss, want)
	}
	if miss := Missing(m, struct{ Role string }{m.Role}); len(miss) != 12 {
		t.Fatalf("a form of the role alone misses %d fields, want 12: %q", len(miss), miss)
	}
}

// Every value Message makes is its own, so that two fields swapped by a
// conversion show.
func TestMessageSetsEveryFieldToAValueOfItsOwn(t *testing.T) {
	m := Message()
	b := m.Content[0]
	strs := []string{m.Role, m.RequestID, m.Skills[0], m.Provider, m.Model, m.StopReason, m.ErrorMessage, m.ToolCallID, m.ToolName,
		b.Type, b.Text, b.Signature, b.Attachment, b.Data, b.MimeType, b.ID, b.Name, string(b.Arguments)}
	u := m.Usage
	ints := []int{int(m.Timestamp), u.Input, u.Output, u.CacheRead, u.CacheWrite, u.TotalTokens}
	for _, s := range strs {
		if s == "" {
			t.Fatalf("an empty field in %+v", m)
		}
	}
	if !m.IsError || len(slices.Compact(slices.Sorted(slices.Values(strs)))) != len(strs) || len(slices.Compact(slices.Sorted(slices.Values(ints)))) != len(ints) {
		t.Fatalf("fields share values or are unset: %+v", m)
	}
	if !json.Valid(b.Arguments) || Block().Arguments == nil {
		t.Fatalf("arguments %s are not JSON", b.Arguments)
	}
}
