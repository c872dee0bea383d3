package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// A recovery file is written for people and tools to rescue an unsaved
// result (docs/storage.md): its layout is pinned like the session format.
// go test ./engine -run TestRecoveryFileLayout -update rewrites it.
func TestRecoveryFileLayout(t *testing.T) {
	ws := "0195f0e2-7c3a-7000-8000-0000000000aa"
	pinned := "2026-11-29T17:00:04.000Z"
	h := store.Header{
		Format: store.FormatName, Version: store.FormatVersion, ID: "0195f0e2-7c3a-7000-8000-000000000001",
		WorkspaceID: &ws, Cwd: "/work/proj", CreatedAt: 1795972380000, UpdatedAt: 1795972384450,
		Title: "Fix <main> & test", TitleSource: store.TitleAuto, PinnedAt: &pinned, Unread: true,
		Model: &store.ModelRef{Provider: "fake", ID: "m1"}, Effort: "high", Permission: "ask",
		MessageCount: 1, UserMessageCount: 1, MessagesBytes: 90, MessagesCRC: 12345,
		Compaction: &store.CompactionMeta{ID: "cp-1", MessageCount: 1, TokensBefore: 10, CreatedAt: 1795972383000},
		Usage:      convo.SessionUsage{UsageSum: convo.UsageSum{Input: 5, Output: 1, TotalTokens: 6, Calls: 1, Unpriced: 1}, Title: convo.UsageSum{Input: 5, Output: 1, TotalTokens: 6, Calls: 1, Unpriced: 1}},
	}
	run := convo.UsageSum{Input: 1, Output: 2, TotalTokens: 3, Calls: 1, Cost: 0.25}
	timings := []store.PromptTiming{{ID: "run-1", MessageStartIndex: store.Some(0), MessageEndIndex: store.Some(2), StartedAt: 1795972384000, FinishedAt: store.Some(int64(1795972384450)), Stopped: true, Usage: run}}
	usage := h.Usage
	usage.Add(convo.SessionUsage{UsageSum: run})
	msgs := []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1795972384000, RequestID: "r1", Content: []convo.Block{{Type: convo.BlockText, Text: "a <b> & c"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972384400, Provider: "fake", Model: "m1", StopReason: convo.StopToolUse,
			Usage:   &convo.Usage{Input: 1, Output: 2, TotalTokens: 3},
			Content: []convo.Block{{Type: convo.BlockToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
	}
	got, err := recoveryBody(h.ID, ws, h.Cwd, h, timings, msgs, usage, errors.New("write header.json: no space left on device"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "recovery.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("recovery file differs from %s:\ngot\n%s\nwant\n%s", path, got, want)
	}
}
