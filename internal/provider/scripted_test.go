package provider_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
)

func scripted(t *testing.T, script string) *provider.Scripted {
	t.Helper()
	p, err := provider.NewScriptedFromBytes([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return p.(*provider.Scripted)
}

func toolResult(id, text string) convo.Message {
	return convo.Message{Role: convo.RoleToolResult, ToolCallID: id, ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: text}}}
}

func TestScriptedSteps(t *testing.T) {
	p := scripted(t, `{"turns":[{
		"steps":[
			{"thinking":"Let me "},{"thinking":"think.","signature":"sig"},
			{"text":"Hel"},{"sleepMs":1},{"text":"lo"},
			{"toolCall":{"id":"c1","name":"read","arguments":{"path":"a.txt"}}},
			{"toolCall":{"name":"ls"}}
		],
		"usage":{"input":10,"output":5}
	}]}`)
	var rec recorder
	msg, err := p.Stream(context.Background(), provider.Request{Model: "fake-1", Messages: []convo.Message{user("hi")}}, rec.on)
	if err != nil {
		t.Fatal(err)
	}
	assertBlocks(t, msg.Content, `[
		{"type":"thinking","text":"Let me think.","signature":"sig"},
		{"type":"text","text":"Hello"},
		{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}},
		{"type":"toolCall","id":"call_1_7","name":"ls","arguments":{}}
	]`)
	if msg.StopReason != convo.StopToolUse || msg.Provider != "scripted" || msg.Model != "fake-1" || msg.Role != convo.RoleAssistant {
		t.Errorf("stop %q provider %q model %q", msg.StopReason, msg.Provider, msg.Model)
	}
	if *msg.Usage != (convo.Usage{Input: 10, Output: 5, TotalTokens: 15}) {
		t.Errorf("usage = %+v", *msg.Usage)
	}
	var kinds []string
	for _, d := range rec.deltas {
		kinds = append(kinds, string(d.Kind))
	}
	if got := strings.Join(kinds, ","); got != "thinking,thinking,text,text,toolCall,toolArgs,toolCall" {
		t.Errorf("one delta per step: %s", got)
	}
	if p.Remaining() != 0 || len(p.Requests()) != 1 || p.Requests()[0].Model != "fake-1" {
		t.Errorf("remaining %d requests %d", p.Remaining(), len(p.Requests()))
	}
}

func TestScriptedDefaultsAndOverrides(t *testing.T) {
	p := scripted(t, `{"turns":[
		{"steps":[{"text":"plain answer"}]},
		{"steps":[{"text":"cut"}],"stopReason":"length"}
	]}`)
	msg, err := p.Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("hello there")}}, nil)
	if err != nil || msg.StopReason != convo.StopEnd {
		t.Fatalf("stop %q err %v", msg.StopReason, err)
	}
	if msg.Usage.Input == 0 || msg.Usage.Output == 0 || msg.Usage.TotalTokens != msg.Usage.Input+msg.Usage.Output {
		t.Errorf("estimated usage = %+v", *msg.Usage)
	}
	msg, _ = p.Stream(context.Background(), provider.Request{Model: "m", Messages: []convo.Message{user("more")}}, nil)
	if msg.StopReason != convo.StopLength {
		t.Errorf("stop = %q", msg.StopReason)
	}
}

func TestScriptedMatchAndContinuation(t *testing.T) {
	p := scripted(t, `{"turns":[
		{"match":"weather","steps":[{"text":"Sunny."}]},
		{"steps":[{"toolCall":{"id":"r1","name":"read","arguments":{"path":"x"}}}]},
		{"steps":[{"text":"The file says x."}]}
	]}`)
	ctx := context.Background()
	// "hello" skips the turn that wants "weather" and takes the next one.
	history := []convo.Message{user("hello")}
	msg, err := p.Stream(ctx, provider.Request{Model: "m", Messages: history}, nil)
	if err != nil || msg.StopReason != convo.StopToolUse {
		t.Fatalf("stop %q err %v", msg.StopReason, err)
	}
	// After the tool result, the script goes on with the next turn.
	history = append(history, msg, toolResult("r1", "x"))
	msg, err = p.Stream(ctx, provider.Request{Model: "m", Messages: history}, nil)
	if err != nil || msg.Text() != "The file says x." {
		t.Fatalf("text %q err %v", msg.Text(), err)
	}
	// The skipped turn is still there for a prompt that matches it.
	msg, err = p.Stream(ctx, provider.Request{Model: "m", Messages: append(history, msg, user("how is the weather?"))}, nil)
	if err != nil || msg.Text() != "Sunny." {
		t.Fatalf("text %q err %v", msg.Text(), err)
	}
	// Exhausted.
	msg, err = p.Stream(ctx, provider.Request{Model: "m", Messages: []convo.Message{user("anything")}}, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindScript || !strings.Contains(perr.Message, "exhausted") || !strings.Contains(perr.Message, `"anything"`) {
		t.Fatalf("err = %v", err)
	}
	if msg.StopReason != convo.StopError || len(msg.Content) != 0 {
		t.Errorf("message = %+v", msg)
	}
}

func TestScriptedPurpose(t *testing.T) {
	p := scripted(t, `{"turns":[
		{"steps":[{"text":"main answer"}]},
		{"purpose":"title","steps":[{"text":"A title"}]}
	]}`)
	ctx := context.Background()
	msg, err := p.Stream(ctx, provider.Request{Model: "m", Purpose: provider.PurposeTitle, Messages: []convo.Message{user("q")}}, nil)
	if err != nil || msg.Text() != "A title" {
		t.Fatalf("title %q err %v", msg.Text(), err)
	}
	msg, err = p.Stream(ctx, provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, nil)
	if err != nil || msg.Text() != "main answer" {
		t.Fatalf("main %q err %v", msg.Text(), err)
	}
	_, err = p.Stream(ctx, provider.Request{Model: "m", Purpose: provider.PurposeSummary, Messages: []convo.Message{user("q")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "for purpose summary") {
		t.Fatalf("err = %v", err)
	}
}

func TestScriptedFailures(t *testing.T) {
	p := scripted(t, `{"turns":[
		{"steps":[{"text":"partial"},{"error":"boom"}]},
		{"steps":[{"error":"slow down","status":429,"retryable":true}]},
		{"steps":[{"text":"half"},{"truncate":true},{"text":"never"}]}
	]}`)
	ctx := context.Background()
	req := provider.Request{Model: "m", Messages: []convo.Message{user("q")}}
	msg, err := p.Stream(ctx, req, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindProvider || perr.Message != "boom" || msg.Text() != "partial" || msg.StopReason != convo.StopError {
		t.Errorf("error step: err %v text %q", err, msg.Text())
	}
	_, err = p.Stream(ctx, req, nil)
	if !errors.As(err, &perr) || perr.Kind != provider.KindHTTP || perr.Status != 429 || !perr.Retryable {
		t.Errorf("error with status: %#v", err)
	}
	msg, err = p.Stream(ctx, req, nil)
	if !errors.Is(err, provider.ErrTruncated) || msg.Text() != "half" {
		t.Errorf("truncate: err %v text %q", err, msg.Text())
	}
}

func TestScriptedHangUntilCancel(t *testing.T) {
	p := scripted(t, `{"turns":[{"steps":[{"text":"working"},{"hang":true},{"text":"never"}]}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg, err := p.Stream(ctx, provider.Request{Model: "m", Messages: []convo.Message{user("q")}}, func(provider.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) || msg.Text() != "working" || msg.StopReason != convo.StopAborted {
		t.Fatalf("err %v text %q stop %q", err, msg.Text(), msg.StopReason)
	}
}

func TestScriptedFileFromDisk(t *testing.T) {
	dir := t.TempDir()
	script := `{
		"log": "requests.jsonl",
		"turns": [{"steps": [{"text": "before"}, {"touchFile": "reached"}, {"waitFile": "gate"}, {"text": " after"}]}]
	}`
	path := filepath.Join(dir, "model.json")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := provider.New(provider.Config{Name: "fake", API: provider.APIScripted, Script: path})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan streamResult, 1)
	go func() {
		msg, err := p.Stream(context.Background(), provider.Request{
			Model: "m", System: "sys", Effort: "low", Messages: []convo.Message{user("q")},
			Tools: []provider.Tool{{Name: "read"}, {Name: "ls"}},
		}, nil)
		done <- streamResult{msg, err}
	}()
	// The model tells us it reached the gate (touchFile), then waits for it.
	waitFile(t, filepath.Join(dir, "reached"), done)
	select {
	case r := <-done:
		t.Fatalf("stream finished before the gate opened: %+v", r)
	default:
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.msg.Text() != "before after" || r.msg.Provider != "fake" {
		t.Fatalf("text %q provider %q err %v", r.msg.Text(), r.msg.Provider, r.err)
	}

	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatal("request log is empty")
	}
	assertJSON(t, sc.Bytes(), `{"turn":1,"model":"m","effort":"low","system":"sys","tools":["read","ls"],
		"messages":[{"role":"user","content":[{"type":"text","text":"q"}],"timestamp":0}]}`)
}

type streamResult struct {
	msg convo.Message
	err error
}

// waitFile waits for path to appear, failing if the stream ends first.
func waitFile(t *testing.T, path string, done <-chan streamResult) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("stream ended before touching %s: %+v", path, r)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func TestScriptedRejectsBadScripts(t *testing.T) {
	for script, want := range map[string]string{
		`{"turns":[{"steps":[{"text":"a","hang":true}]}]}`:                "exactly one",
		`{"turns":[{"steps":[{}]}]}`:                                      "exactly one",
		`{"turns":[{"steps":[{"txt":"a"}]}]}`:                             "unknown field",
		`{"turns":[{"stopReason":"done","steps":[]}]}`:                    "stopReason",
		`{"turns":[{"purpose":"chat","steps":[]}]}`:                       "purpose",
		`{"turns":[{"steps":[{"toolCall":{"arguments":{}}}]}]}`:           "needs a name",
		`{"turns":[{"steps":[{"toolCall":{"name":"x","arguments":{]}}}]}`: "invalid character",
		`not json`: "invalid character",
	} {
		_, err := provider.NewScriptedFromBytes([]byte(script))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", script, err, want)
		}
	}
	if _, err := provider.NewScripted(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing script file accepted")
	}
	if _, err := provider.New(provider.Config{API: provider.APIScripted}); err == nil {
		t.Error("scripted provider without a script accepted")
	}
}
