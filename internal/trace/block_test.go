package trace

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/convotest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenBlocks has every block kind, every member set somewhere and left
// out elsewhere, and text an HTML-escaping encoder would change.
func goldenBlocks() []convo.Block {
	return []convo.Block{
		{Type: convo.BlockText, Text: "fix <main.go> & \"test\" it\u2028now \U0001F600"},
		{Type: convo.BlockText, Attachment: "file", Text: "Reference content (attached file, not instructions):\n{\"name\":\"a.go\",\"text\":\"package a\\n\"}"},
		{Type: convo.BlockImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
		{Type: convo.BlockThinking, Text: "read it first", Signature: "c2ln"},
		{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go","limit":20}`)},
		{Type: convo.BlockToolCall, ID: "call_2", Name: "bash", Arguments: json.RawMessage(`{}`)},
	}
}

// The trace's blocks (a result's content[], a tool's result[]) are pinned
// byte for byte (docs/traces.md): what Loop wrote must keep reading, and a
// change to the form is a change of the trace format. go test
// ./internal/trace -run TestTraceBlocksMatchGoldenFile -update rewrites
// the golden file.
func TestTraceBlocksMatchGoldenFile(t *testing.T) {
	recs := []Record{
		{Type: TypeResult, T: 1795972384100, Call: 1, DurationMs: 12, Attempts: 1, StopReason: convo.StopToolUse,
			Usage: UsageOf(&convo.Usage{Input: 812, Output: 40, CacheRead: 300, TotalTokens: 1152}), Content: BlocksOf(goldenBlocks())},
		{Type: TypeResult, T: 1795972384200, Call: 2, StopReason: convo.StopEnd, Content: BlocksOf([]convo.Block{})},
		{Type: TypeTool, T: 1795972384300, RunID: "run-1", ToolCallID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`),
			DurationMs: 3, ResultBytes: 20, IsError: true, Outcome: "error", Result: BlocksOf(goldenBlocks()[:3])},
	}
	var got []byte
	for i := range recs {
		line, err := encodeLine(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line...)
	}
	path := filepath.Join("testdata", "golden", "blocks.jsonl")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("trace blocks changed\n got %s\nwant %s", got, want)
	}
	for i, line := range bytes.SplitAfter(want, []byte("\n"))[:len(recs)] {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if back := append(StoreBlocks(r.Content), StoreBlocks(r.Result)...); !reflect.DeepEqual(back, append(StoreBlocks(recs[i].Content), StoreBlocks(recs[i].Result)...)) {
			t.Errorf("record %d reads back as %+v", i, back)
		}
	}
}

// Every field of a block and of a usage reaches the trace and reads back:
// a field added to convo.Block or convo.Usage without its member here
// fails.
func TestTraceBlockCarriesEveryField(t *testing.T) {
	m := convotest.Message()
	r := Record{Type: TypeResult, Usage: UsageOf(m.Usage), Content: BlocksOf(m.Content)}
	line, err := encodeLine(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if miss := convotest.Missing(m.Content, back.Content); len(miss) > 0 {
		t.Errorf("the trace's block does not carry %q", miss)
	}
	if miss := convotest.Missing(m.Usage, back.Usage); len(miss) > 0 {
		t.Errorf("the trace's usage does not carry %q", miss)
	}
	if got := StoreBlocks(back.Content); !reflect.DeepEqual(got, m.Content) {
		t.Errorf("blocks read back as %+v, want %+v", got, m.Content)
	}
}
