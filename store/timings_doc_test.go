package store

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/convo"
)

// docTimings reads a session's prompt timings as docs/storage.md tells a
// reader to, sharing no code with the store: header.json's timingsCount,
// timingsBytes and timingsCrc32c name the committed range of
// timings.jsonl; its lines are folded in order over the header's
// promptTimings, each replacing the timing at its index or appending when
// its index is the number so far.
func docTimings(t *testing.T, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "header.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Count         int              `json:"timingsCount"`
		Bytes         int64            `json:"timingsBytes"`
		CRC           uint32           `json:"timingsCrc32c"`
		PromptTimings []map[string]any `json:"promptTimings"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	out := h.PromptTimings
	if h.Count == 0 {
		return out
	}
	f, err := os.ReadFile(filepath.Join(dir, "timings.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(f)) < h.Bytes {
		t.Fatalf("timings.jsonl has %d bytes, the header names %d", len(f), h.Bytes)
	}
	f = f[:h.Bytes]
	if c := crc32.Checksum(f, crc32.MakeTable(crc32.Castagnoli)); c != h.CRC {
		t.Fatalf("crc %d, header says %d", c, h.CRC)
	}
	lines := bytes.SplitAfter(f, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != h.Count {
		t.Fatalf("%d lines, the header names %d", len(lines), h.Count)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil || l[len(l)-1] != '\n' {
			t.Fatalf("line %d: %q: %v", i+1, l, err)
		}
		idx := int(m["index"].(float64))
		delete(m, "index")
		switch {
		case idx == len(out):
			out = append(out, m)
		case idx >= 0 && idx < len(out):
			out[idx] = m
		default:
			t.Fatalf("line %d: index %d with %d timings", i+1, idx, len(out))
		}
	}
	return out
}

// The documented reader of timings.jsonl finds exactly the timings the
// store reads, in a session written before timings.jsonl, after its
// migration, and in one whose timings are replaced and appended.
func TestTimingsReadAsDocumentedEqualWhatTheStoreReads(t *testing.T) {
	same := func(what, dir string, want []PromptTiming) {
		t.Helper()
		got := docTimings(t, dir)
		enc, _ := json.Marshal(recordsOfTimings(want))
		var wantMaps []map[string]any
		json.Unmarshal(enc, &wantMaps)
		if len(want) == 0 && len(got) == 0 {
			return
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(wantMaps)
		if !bytes.Equal(g, w) {
			t.Fatalf("%s: the documented reader finds\n%s\nthe store\n%s", what, g, w)
		}
	}
	r, s := openLegacyGolden(t)
	same("old header", s.Dir(), s.Timings())
	more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
	next := PromptTiming{ID: "run-4", UserMessageIndex: 3, MessageStartIndex: Some(10), StartedAt: 1795972390000}
	mustCommit(t, s, more, nil, nil, TimingAt{Index: 3, Timing: next})
	same("migrated", s.Dir(), reopen(t, r, s).Timings())
	done := next
	done.MessageEndIndex, done.FinishedAt, done.Usage = Some(11), Some(int64(1795972391000)), convo.UsageSum{Input: 3, Calls: 1, Cost: 0.5}
	mustCommit(t, s, more, nil, nil, TimingAt{Index: 3, Timing: done}, TimingAt{Index: 4, Timing: PromptTiming{UserMessageIndex: 4, StartedAt: 7, Stopped: true}})
	same("replaced and appended", s.Dir(), reopen(t, r, s).Timings())
}
