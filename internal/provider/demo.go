package provider

import (
	"context"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
)

// DemoName is the provider name of the built-in demo model.
const DemoName = "demo"

type demo struct {
	delay time.Duration
}

// Demo returns Loop's offline demo model: it streams a canned answer in
// small chunks, calls the ls tool once on "." (when the request offers
// ls), and after the tool result closes with a short answer. It never
// reads the prompt beyond noticing tool results.
func Demo() Provider { return NewDemo(15 * time.Millisecond) }

// NewDemo is Demo with another pause between chunks (0 for tests).
func NewDemo(chunkDelay time.Duration) Provider { return &demo{delay: chunkDelay} }

const (
	demoIntro = "Hello! I am Loop's offline demo model. No real model is connected, " +
		"so my answers are canned and I have not really read your message. "
	demoToolIntro = "To show how tool calls work, I will list the current directory with the ls tool."
	demoNoTool    = "To talk to a real model, set OPENAI_API_KEY or ANTHROPIC_API_KEY, " +
		"or add a provider to config.json (see docs/configuration.md)."
	demoClosing = "That was the ls tool's answer, shown above. The round trip is complete: " +
		"streamed text, a tool call, its result and this reply. " + demoNoTool
	demoThinking = "This is the demo model: the reply is canned, whatever the prompt says."
)

func (d *demo) Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error) {
	b := newBuilder(DemoName, req.Model, onDelta)
	stream := func(blockType, text string) error {
		for _, chunk := range demoChunks(text) {
			if err := sleepCtx(ctx, d.delay); err != nil {
				return err
			}
			b.appendText(blockType, chunk)
		}
		return ctx.Err()
	}
	var err error
	switch {
	case req.Purpose == PurposeTitle:
		b.appendText(convo.BlockText, "Loop demo session")
	case req.Purpose == PurposeSummary:
		b.appendText(convo.BlockText, "A conversation with Loop's offline demo model, which gives canned answers.")
	case afterToolResult(req.Messages):
		err = stream(convo.BlockText, demoClosing)
	default:
		if req.Effort != "" && req.Effort != EffortDefault && req.Effort != EffortOff {
			err = stream(convo.BlockThinking, demoThinking)
		}
		if err == nil && offersTool(req.Tools, "ls") {
			if err = stream(convo.BlockText, demoIntro+demoToolIntro); err == nil {
				i := b.startToolCall(newToolCallID(), "ls")
				b.addArgs(i, `{"path":"."}`)
			}
		} else if err == nil {
			err = stream(convo.BlockText, demoIntro+demoNoTool)
		}
	}
	if err != nil {
		return b.fail(ctx, err)
	}
	b.usage = estimateUsage(req, b.outputChars())
	return b.finish(convo.StopEnd)
}

func afterToolResult(msgs []convo.Message) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Role == convo.RoleToolResult
}

func offersTool(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// demoChunks splits text into pieces of two words, like a model's tokens
// arriving in bursts.
func demoChunks(text string) []string {
	var chunks []string
	words := strings.SplitAfter(text, " ")
	for i := 0; i < len(words); i += 2 {
		chunks = append(chunks, strings.Join(words[i:min(i+2, len(words))], ""))
	}
	return chunks
}
