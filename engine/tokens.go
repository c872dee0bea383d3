package engine

import (
	"sync"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
	"github.com/tiktoken-go/tokenizer"
)

// tokenCounter counts tokens with a real BPE tokenizer (o200k_base), loaded
// on first use so start-up stays fast. Providers tokenize differently; the
// count is a close estimate for the budget check, not a bill.
type tokenCounter struct {
	once sync.Once
	enc  tokenizer.Codec
	err  error
}

// imageTokens is what one image costs in a request, roughly, for all APIs.
const imageTokens = 1600

func (c *tokenCounter) count(s string) int {
	c.once.Do(func() { c.enc, c.err = tokenizer.Get(tokenizer.O200kBase) })
	if c.err != nil || s == "" {
		return (len(s) + 3) / 4
	}
	n, err := c.enc.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}

// messageTokens counts one message as a request carries it.
func (c *tokenCounter) messageTokens(m *store.Message) int {
	n := 4 // role and framing
	for _, b := range m.Content {
		switch b.Type {
		case store.BlockText, store.BlockThinking:
			n += c.count(b.Text)
		case store.BlockImage:
			n += imageTokens
		case store.BlockToolCall:
			n += c.count(b.Name) + c.count(string(b.Arguments)) + 4
		}
	}
	return n
}

// requestTokens counts a whole request: system prompt, tool schemas and
// messages. cache memoizes history messages by pointer-stable index.
func (c *tokenCounter) requestTokens(req *provider.Request, cached func(i int, m *store.Message) int) int {
	n := c.count(req.System)
	for _, t := range req.Tools {
		schema, _ := jsonenc.Marshal(t.Schema)
		n += c.count(t.Name) + c.count(t.Description) + c.count(string(schema))
	}
	for i := range req.Messages {
		if cached != nil {
			n += cached(i, &req.Messages[i])
		} else {
			n += c.messageTokens(&req.Messages[i])
		}
	}
	return n
}
