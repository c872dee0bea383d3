package store

import (
	"bytes"

	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/convo"
)

// store/testdata/golden-fork pins version 2 (docs/storage.md, "Forks and
// rewinds") byte for byte: a parent, a fork of it that went on with a
// prompt of its own, and the parent rewound, with the fork of what it
// dropped. go test ./store -run GoldenFork -update rewrites it.

const (
	goldenForkDir     = "testdata/golden-fork"
	goldenForkParent  = "0195f0e2-7c3a-7000-8000-000000000101"
	goldenForkChild   = "0195f0e2-7c3a-7000-8000-000000000102"
	goldenForkDropped = "0195f0e2-7c3a-7000-8000-000000000103"
)

var goldenForkSessions = []string{goldenForkParent, goldenForkChild, goldenForkDropped}

// writeGoldenFork writes the golden fork root with a fixed clock and ids.
func writeGoldenFork(t *testing.T) *Root {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	r.now = newTestClock().now
	ids := append([]string{}, goldenForkSessions...)
	r.newID = func() string {
		id := ids[0]
		ids = ids[1:]
		return id
	}
	p, err := r.Create("", "/")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r1, r2 := goldenHistory()
	tm := goldenTimings()
	all := append(append([]convo.Message{}, r1...), r2...)
	mustCommit(t, p, all, nil, func(h *Header) { h.Title = "Fix <main> & test" },
		TimingAt{Index: 0, Timing: tm[0]}, TimingAt{Index: 1, Timing: tm[1]})
	f := mustFork(t, p, 5, "Another way")
	defer f.Close()
	own := []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1795972386000, RequestID: "req-f", Content: []convo.Block{{Type: convo.BlockText, Text: "try it otherwise"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972386100, Provider: "openai", Model: "gpt-y", StopReason: convo.StopEnd,
			Content: []convo.Block{{Type: convo.BlockText, Text: "done otherwise"}}},
	}
	mustCommit(t, f, append(all[:5:5], own...), nil, nil, TimingAt{Index: 1, Timing: PromptTiming{ID: "run-f", UserMessageIndex: 1,
		MessageStartIndex: Some(5), MessageEndIndex: Some(7), StartedAt: 1795972386000, FinishedAt: Some(int64(1795972386150))}})
	if _, err := p.Rewind(5); err != nil {
		t.Fatal(err)
	}
	return r
}

// goldenForkFiles are the files of the golden fork root.
func goldenForkFiles() []string {
	var out []string
	for _, id := range goldenForkSessions {
		for _, name := range []string{headerFile, messagesFile, indexFile, runtimeFile, timingsFile} {
			out = append(out, filepath.Join("sessions", globalScope, id, name))
		}
	}
	return out
}

func TestGoldenForkIsWrittenByteForByte(t *testing.T) {
	r := writeGoldenFork(t)
	for _, rel := range goldenForkFiles() {
		got, err := os.ReadFile(filepath.Join(r.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(goldenForkDir, rel)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./store -run GoldenFork -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\ngot  %q\nwant %q", rel, path, got, want)
		}
	}
}

// TestGoldenForkOpensExactlyAsWritten opens a copy of the committed golden
// fork root: each session reads back its whole history.
func TestGoldenForkOpensExactlyAsWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(goldenForkDir)); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := goldenHistory()
	all := append(append([]convo.Message{}, r1...), r2...)
	want := map[string]int{goldenForkParent: 5, goldenForkChild: 7, goldenForkDropped: len(all)}
	for id, n := range want {
		s, err := r.Open("", id)
		if err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		if got := len(s.Messages()); got != n {
			t.Fatalf("%s holds %d messages, want %d", id, got, n)
		}
		if id != goldenForkChild {
			wantMessages(t, s.Messages(), all[:n])
		}
		if h := s.Header(); h.Version != ForkFormatVersion {
			t.Fatalf("%s: version %d", id, h.Version)
		}
		s.Close()
	}
}
