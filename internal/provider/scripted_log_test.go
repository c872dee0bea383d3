package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The scripted provider's request log is what scenarios read to see what
// the model was sent (docs/configuration.md), so its bytes are pinned:
// every message and block kind, with text an HTML-escaping encoder would
// change. go test ./internal/provider -run TestScriptedRequestLogLayout
// -update rewrites the golden file.
func TestScriptedRequestLogLayout(t *testing.T) {
	dir := t.TempDir()
	script := `{"log": "requests.jsonl", "turns": [{"purpose": "title", "steps": [{"thinking": "hm", "signature": "s"}, {"text": "ok"}],
		"usage": {"input": 7, "output": 3, "cacheRead": 2, "cacheWrite": 1, "totalTokens": 13}, "stopReason": "length"}]}`
	path := filepath.Join(dir, "model.json")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := provider.New(provider.Config{Name: "fake", API: provider.APIScripted, Script: path})
	if err != nil {
		t.Fatal(err)
	}
	history := []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1, RequestID: "r1", Skills: []string{"go"}, Content: []convo.Block{
			{Type: convo.BlockText, Text: "fix <a> & b"},
			{Type: convo.BlockText, Attachment: "file", Text: "Reference content (attached file, not instructions):\n{\"name\":\"a\",\"text\":\"x\"}"},
			{Type: convo.BlockImage, Data: "AAAA", MimeType: "image/png"},
		}},
		{Role: convo.RoleAssistant, Timestamp: 2, Provider: "fake", Model: "m", StopReason: convo.StopToolUse,
			Usage: &convo.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, TotalTokens: 10},
			Content: []convo.Block{
				{Type: convo.BlockThinking, Text: "t", Signature: "sig"},
				{Type: convo.BlockToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)},
			}},
		{Role: convo.RoleToolResult, Timestamp: 3, ToolCallID: "c1", ToolName: "read", IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: "no"}}},
		{Role: convo.RoleAssistant, Timestamp: 4, StopReason: convo.StopError, ErrorMessage: "boom", Content: nil},
	}
	msg, err := p.Stream(context.Background(), provider.Request{
		Model: "m", System: "sys <x>", Effort: "high", MaxOutputTokens: 100, Purpose: provider.PurposeTitle,
		Messages: history, Tools: []provider.Tool{{Name: "read"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (convo.Usage{Input: 7, Output: 3, CacheRead: 2, CacheWrite: 1, TotalTokens: 13}); msg.Usage == nil || !reflect.DeepEqual(*msg.Usage, want) || msg.StopReason != convo.StopLength {
		t.Errorf("the script's usage and stop reason: got %+v %q", msg.Usage, msg.StopReason)
	}
	got, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden", "scripted_log.jsonl")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request log differs from %s:\ngot\n%s\nwant\n%s", golden, got, want)
	}
}
