package turn

import (
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// FuzzTokenBound checks what lets a request skip the tokenizer: the bound
// is never below the exact count, for any text, valid UTF-8 or not.
func FuzzTokenBound(f *testing.F) {
	for _, s := range []string{
		"", "a", " ", "hello world", "    \n\n\t  ", "1234567890123", "ééé", "日本語のテキスト",
		"🙂🙂🙂", "\xff", "a\xffb\xfe", "\xe2\x82", strings.Repeat("\x80", 40), "<|endoftext|>",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", strings.Repeat("ab", 300),
	} {
		f.Add(s)
	}
	var c Counter
	f.Fuzz(func(t *testing.T, s string) {
		if n, b := c.Count(s), Bound(s); n > b {
			t.Fatalf("count %d > bound %d for %q", n, b, s)
		}
		m := convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{
			{Type: convo.BlockText, Text: s}, {Type: convo.BlockThinking, Text: s},
			{Type: convo.BlockToolCall, Name: s, Arguments: []byte(s)},
		}}
		if n, b := c.MessageTokens(&m), MessageBound(&m); n > b {
			t.Fatalf("message: count %d > bound %d for %q", n, b, s)
		}
	})
}
