package turn

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/tools"
)

// DefaultToolOutputMax is how many bytes of a tool's output the model gets
// when config.json does not say (toolOutput.maxBytes): measured on the
// scripted session of docs/performance.md ("Tokens a session sends").
const DefaultToolOutputMax = 8 << 10

// ToolOutputPath is the path under which read finds the whole output of
// the tool result at history index i, whose middle the model did not get
// (docs/configuration.md, "toolOutput").
func ToolOutputPath(i int) string { return tools.ToolOutputPrefix + strconv.Itoa(i) }

// ParseToolOutputPath is the history index a ToolOutputPath names.
func ParseToolOutputPath(p string) (int, bool) {
	rest, ok := strings.CutPrefix(p, tools.ToolOutputPrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == rest
}

// ToolOutputText is the output of a tool result as one text, what
// ToolOutputPath reads: its text blocks, one after the other.
func ToolOutputText(m *convo.Message) string {
	var b strings.Builder
	for i := range m.Content {
		if m.Content[i].Type == convo.BlockText {
			b.WriteString(m.Content[i].Text)
		}
	}
	return b.String()
}

// shown is the history message at index i as the model gets it: a tool
// result whose text is longer than max bytes (max > 0) keeps its start and
// its end, about max bytes in all, cut at line ends where one is near,
// with one line between them saying what was left out and how to read it.
// Every other message is m itself. The history keeps the whole output, so
// clients and traces see all of it; the model input is a function of the
// message and max alone, so every request shows it the same way.
func shown(m *convo.Message, i, max int) *convo.Message {
	if max <= 0 || m.Role != convo.RoleToolResult || m.ToolName == tools.NameRead {
		return m
	}
	n := 0
	for j := range m.Content {
		if m.Content[j].Type == convo.BlockText {
			n += len(m.Content[j].Text)
		}
	}
	if n <= max {
		return m
	}
	text := ToolOutputText(m)
	head := lineCut(text, max/2, true)
	tail := lineCut(text, max-len(head), false)
	firstLeft := strings.Count(head, "\n") + 1
	before := text[:len(text)-len(tail)]
	lastLeft := strings.Count(before, "\n")
	if !strings.HasSuffix(before, "\n") {
		lastLeft++
	}
	note := fmt.Sprintf("\n[... %d of %d bytes left out here (lines %d-%d of the output); read path %q with offset=%d to see them ...]\n",
		len(text)-len(head)-len(tail), len(text), firstLeft, lastLeft, ToolOutputPath(i), firstLeft)
	c := *m
	c.Content = make([]convo.Block, 0, len(m.Content))
	c.Content = append(c.Content, convo.Block{Type: convo.BlockText, Text: head + note + tail})
	for _, b := range m.Content {
		if b.Type != convo.BlockText {
			c.Content = append(c.Content, b)
		}
	}
	return &c
}

// lineCut is the first (head) or last n bytes of s, shortened to end (or
// start) at a line boundary when one lies in the last quarter of them, and
// never splitting a rune.
func lineCut(s string, n int, head bool) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	if head {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= n-n/4 {
			cut = nl + 1
		}
		return s[:cut]
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	if s[start-1] == '\n' {
		return s[start:]
	}
	if nl := strings.IndexByte(s[start:], '\n'); nl >= 0 && nl < n/4 {
		start += nl + 1
	}
	return s[start:]
}
