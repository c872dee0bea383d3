package turn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// A tool result longer than the bound goes to the model as its start and
// its end, cut at line ends, with one line between them saying how much
// was left out and which path and offset read takes to see it; a shorter
// one, and read's own results, go whole.
func TestToolOutputOverTheBoundGoesToTheModelAsItsStartAndEnd(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	out := b.String() // 10,000 bytes, 1,000 lines
	m := convo.Message{Role: convo.RoleToolResult, ToolName: "bash", ToolCallID: "c1", Content: []convo.Block{{Type: convo.BlockText, Text: out}}}
	got := shown(&m, 7, 2000)
	if got == &m || len(got.Content) != 1 {
		t.Fatalf("not cut: %d blocks", len(got.Content))
	}
	text := got.Content[0].Text
	if !strings.HasPrefix(text, "line 0001\nline 0002\n") || !strings.HasSuffix(text, "line 0999\nline 1000\n") {
		t.Fatalf("start or end lost:\n%s", text)
	}
	note := "\n[... 8000 of 10000 bytes left out here (lines 101-900 of the output); read path \"loop:tool-output/7\" with offset=101 to see them ...]\n"
	if !strings.Contains(text, "line 0100\n"+note+"line 0901\n") {
		t.Fatalf("the note is not between line 100 and line 901:\n%s", text)
	}
	if m.Content[0].Text != out {
		t.Fatal("the history's message changed")
	}
	if i, ok := ParseToolOutputPath("loop:tool-output/7"); !ok || i != 7 {
		t.Fatalf("path parses as %d %v", i, ok)
	}
	if shown(&m, 7, 20000) != &m || shown(&m, 7, 0) != &m {
		t.Fatal("an output within the bound, or without one, was changed")
	}
	r := m
	r.ToolName = "read"
	if shown(&r, 7, 2000) != &r {
		t.Fatal("a read result was cut")
	}
}
