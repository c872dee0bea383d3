package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
)

func TestDemo(t *testing.T) {
	p := provider.NewDemo(0)
	tools := []provider.Tool{{Name: "read"}, {Name: "ls"}}
	history := []convo.Message{user("What can you do?")}
	var rec recorder
	msg, err := p.Stream(context.Background(), provider.Request{Model: "demo", Messages: history, Tools: tools}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Text(), "Loop's offline demo model") {
		t.Errorf("demo does not say what it is: %q", msg.Text())
	}
	if rec.count(provider.DeltaText) < 10 {
		t.Errorf("answer not streamed in small chunks: %d deltas", rec.count(provider.DeltaText))
	}
	last := msg.Content[len(msg.Content)-1]
	if msg.StopReason != convo.StopToolUse || last.Type != convo.BlockToolCall || last.Name != "ls" || string(last.Arguments) != `{"path":"."}` || last.ID == "" {
		t.Fatalf("stop %q last block %+v", msg.StopReason, last)
	}
	if msg.Provider != "demo" || msg.Usage == nil || msg.Usage.Output == 0 {
		t.Errorf("provider %q usage %+v", msg.Provider, msg.Usage)
	}

	history = append(history, msg, convo.Message{Role: convo.RoleToolResult, ToolCallID: last.ID, ToolName: "ls",
		Content: []convo.Block{{Type: convo.BlockText, Text: "README.md\ngo.mod\n"}}})
	msg, err = p.Stream(context.Background(), provider.Request{Model: "demo", Messages: history, Tools: tools}, nil)
	if err != nil || msg.StopReason != convo.StopEnd || !strings.Contains(msg.Text(), "ls tool") {
		t.Fatalf("closing: stop %q text %q err %v", msg.StopReason, msg.Text(), err)
	}
}

func TestDemoWithoutLsThinkingAndTitle(t *testing.T) {
	p := provider.NewDemo(0)
	msg, err := p.Stream(context.Background(), provider.Request{Model: "demo", Effort: "high", Messages: []convo.Message{user("hi")}}, nil)
	if err != nil || msg.StopReason != convo.StopEnd || msg.Content[0].Type != convo.BlockThinking || !strings.Contains(msg.Text(), "OPENAI_API_KEY") {
		t.Fatalf("stop %q content %+v err %v", msg.StopReason, msg.Content, err)
	}
	msg, err = p.Stream(context.Background(), provider.Request{Model: "demo", Purpose: provider.PurposeTitle, Messages: []convo.Message{user("hi")}}, nil)
	if err != nil || msg.Text() != "Loop demo session" {
		t.Fatalf("title %q err %v", msg.Text(), err)
	}
}

func TestDemoCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg, err := provider.Demo().Stream(ctx, provider.Request{Model: "demo", Messages: []convo.Message{user("hi")}}, func(provider.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) || msg.StopReason != convo.StopAborted || msg.Text() == "" {
		t.Fatalf("err %v stop %q text %q", err, msg.StopReason, msg.Text())
	}
}

func TestNewByAPI(t *testing.T) {
	for _, api := range []string{provider.APIOpenAI, provider.APIOpenAIResponses, provider.APIAnthropic, provider.APIDemo} {
		if p, err := provider.New(provider.Config{API: api}); err != nil || p == nil {
			t.Errorf("%s: %v", api, err)
		}
	}
	if _, err := provider.New(provider.Config{Name: "x", API: "gemini"}); err == nil {
		t.Error("unknown api accepted")
	}
	for _, e := range provider.Efforts() {
		if !provider.ValidEffort(e) {
			t.Errorf("%s invalid", e)
		}
	}
	if provider.ValidEffort("extreme") || !provider.ValidEffort("") {
		t.Error("ValidEffort")
	}
}
