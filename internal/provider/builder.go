package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// builder accumulates one streamed assistant message and reports each
// piece to onDelta as it is added. All clients share it so that deltas and
// the returned message agree on block indexes.
type builder struct {
	msg     convo.Message
	usage   convo.Usage
	onDelta func(Delta)
	args    map[int]*strings.Builder // toolCall block index -> argument JSON so far
	texts   map[int]*strings.Builder // text/thinking block index -> text so far (+= would be quadratic)
}

func newBuilder(provider, model string, onDelta func(Delta)) *builder {
	if onDelta == nil {
		onDelta = func(Delta) {}
	}
	return &builder{
		msg: convo.Message{
			Role:      convo.RoleAssistant,
			Content:   []convo.Block{},
			Timestamp: time.Now().UnixMilli(),
			Provider:  provider,
			Model:     model,
		},
		onDelta: onDelta,
		args:    map[int]*strings.Builder{},
		texts:   map[int]*strings.Builder{},
	}
}

func deltaKindOf(blockType string) DeltaKind {
	if blockType == convo.BlockThinking {
		return DeltaThinking
	}
	return DeltaText
}

// appendText adds text or thinking, continuing the last block when it has
// the same type, and returns the block's index.
func (b *builder) appendText(blockType, s string) int {
	if s == "" {
		return -1
	}
	n := len(b.msg.Content)
	if n == 0 || b.msg.Content[n-1].Type != blockType || b.msg.Content[n-1].Data != "" {
		b.msg.Content = append(b.msg.Content, convo.Block{Type: blockType})
		n++
	}
	b.addText(n-1, s)
	return n - 1
}

// newBlock starts an empty text or thinking block and returns its index.
func (b *builder) newBlock(blockType string) int {
	b.msg.Content = append(b.msg.Content, convo.Block{Type: blockType})
	return len(b.msg.Content) - 1
}

// addText appends s to the text or thinking block i.
func (b *builder) addText(i int, s string) {
	if s == "" {
		return
	}
	sb := b.texts[i]
	if sb == nil {
		sb = &strings.Builder{}
		sb.WriteString(b.msg.Content[i].Text)
		b.texts[i] = sb
	}
	sb.WriteString(s)
	b.onDelta(Delta{Kind: deltaKindOf(b.msg.Content[i].Type), Block: i, Text: s})
}

// startToolCall adds a toolCall block and returns its index.
func (b *builder) startToolCall(id, name string) int {
	b.msg.Content = append(b.msg.Content, convo.Block{Type: convo.BlockToolCall, ID: id, Name: name})
	i := len(b.msg.Content) - 1
	b.args[i] = &strings.Builder{}
	b.onDelta(Delta{Kind: DeltaToolCall, Block: i, ToolCallID: id, ToolName: name})
	return i
}

// addArgs appends a fragment of tool call i's argument JSON.
func (b *builder) addArgs(i int, frag string) {
	if frag == "" {
		return
	}
	b.args[i].WriteString(frag)
	b.onDelta(Delta{Kind: DeltaToolArgs, Block: i, Text: frag})
}

// outputChars is the length of everything streamed so far.
func (b *builder) outputChars() int {
	n := 0
	for _, sb := range b.texts {
		n += sb.Len()
	}
	for i, a := range b.args {
		n += a.Len() + len(b.msg.Content[i].Name)
	}
	return n
}

func (b *builder) hasToolCalls() bool {
	return len(b.args) > 0
}

// seal turns accumulated tool arguments into JSON and fills in what the
// provider left out; the message is then safe to store.
func (b *builder) seal() {
	for i, sb := range b.texts {
		b.msg.Content[i].Text = sb.String()
	}
	for i, a := range b.args {
		blk := &b.msg.Content[i]
		blk.Arguments = normalizeArgs(a.String())
		if blk.ID == "" {
			blk.ID = newToolCallID()
		}
	}
	u := b.usage
	if u.TotalTokens == 0 {
		u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	}
	b.msg.Usage = &u
}

// retry ends an attempt that is about to be retried: the usage it
// reported goes to report (Request.AttemptUsage), and the next attempt
// counts from zero.
func (b *builder) retry(report func(convo.Usage)) {
	u := b.usage
	b.usage = convo.Usage{}
	if u == (convo.Usage{}) || report == nil {
		return
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	}
	report(u)
}

// finish returns the complete message.
func (b *builder) finish(stopReason string) (convo.Message, error) {
	b.seal()
	if stopReason == convo.StopEnd && b.hasToolCalls() {
		// Some OpenAI-compatible servers end tool calls with "stop".
		stopReason = convo.StopToolUse
	}
	b.msg.StopReason = stopReason
	return b.msg, nil
}

// fail returns what streamed so far with err; when ctx ended, ctx's error
// wins, because the cause of a torn stream is then the cancellation.
func (b *builder) fail(ctx context.Context, err error) (convo.Message, error) {
	b.seal()
	b.msg.StopReason = convo.StopError
	if ctx.Err() != nil {
		err = ctx.Err()
		b.msg.StopReason = convo.StopAborted
	}
	b.msg.ErrorMessage = err.Error()
	return b.msg, err
}

// normalizeArgs makes a tool call's streamed arguments valid JSON: nothing
// becomes {}, and text that is not JSON (a model's mistake, or a stream cut
// in the middle) is kept as a JSON string, so that the tool reports bad
// arguments instead of the message failing to serialize.
func normalizeArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(s)) == nil {
			return buf.Bytes()
		}
	}
	q, _ := jsonenc.Marshal(s)
	return q
}

func newToolCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
