package turn

import (
	"bytes"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/o200k"
	"github.com/loopdev/loop/internal/provider"
)

// Counter counts tokens with a real BPE tokenizer (o200k_base, package
// internal/o200k), whose vocabulary is loaded on first use: its table
// doubles the process's resident memory, so a request is counted exactly
// only when its upper bound (Bound) could exceed the budget (Fit).
// Providers tokenize differently; the count is a close estimate for the
// budget check, not a bill. One Counter serves every session of an
// engine; the zero value is ready.
type Counter struct {
	used atomic.Bool // the tokenizer was asked for
}

// imageTokens is what one image costs in a request, roughly, for all APIs.
const imageTokens = 1600

// Count is the number of tokens of s.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	c.used.Store(true)
	return o200k.Count(s)
}

// Loaded reports whether the tokenizer has been loaded.
func (c *Counter) Loaded() bool { return c.used.Load() }

// Bound is an upper bound of Count(s) that needs no tokenizer. Every
// o200k_base token stands for at least one byte of the text it is cut
// from, so valid UTF-8 has at most one token a byte. The tokenizer splits
// its input as runes, turning each invalid byte into U+FFFD, three bytes:
// at most three tokens a byte. FuzzTokenBound checks the bound.
func Bound(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	return 3 * len(s)
}

// MessageTokens counts one message as a request carries it.
func (c *Counter) MessageTokens(m *convo.Message) int {
	return messageCost(m, c.Count)
}

// MessageBound is MessageTokens' upper bound, without the tokenizer.
func MessageBound(m *convo.Message) int {
	return messageCost(m, Bound)
}

func messageCost(m *convo.Message, count func(string) int) int {
	n := 4 // role and framing
	for _, b := range m.Content {
		switch b.Type {
		case convo.BlockText, convo.BlockThinking:
			n += count(b.Text)
		case convo.BlockImage:
			n += imageTokens
		case convo.BlockToolCall:
			n += count(b.Name) + count(string(b.Arguments)) + 4
		}
	}
	return n
}

// fixedCost is the token cost of a request's system prompt and tool
// schemas. A session keeps the latest one (State) and replaces it only
// when the prompt or the tools change, so neither is encoded nor counted
// per request. It is immutable once shared: the exact count, when first
// needed, goes into a copy.
type fixedCost struct {
	system string
	tools  []provider.Tool
	bound  int
	exact  int // -1 until counted
}

func (f *fixedCost) same(system string, tools []provider.Tool) bool {
	return f != nil && f.system == system && slices.EqualFunc(f.tools, tools, func(a, b provider.Tool) bool {
		return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Schema, b.Schema)
	})
}

func newFixedCost(system string, tools []provider.Tool) *fixedCost {
	f := &fixedCost{system: system, tools: tools, exact: -1}
	f.bound = fixedTokens(system, tools, Bound)
	return f
}

func fixedTokens(system string, tools []provider.Tool, count func(string) int) int {
	n := count(system)
	for _, t := range tools {
		schema, _ := jsonenc.Marshal(t.Schema)
		n += count(t.Name) + count(t.Description) + count(string(schema))
	}
	return n
}
