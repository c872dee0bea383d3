package trace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new session's trace directory is made with its missing parents, and
// begins at segment 1.
func TestNewTraceDirectoryIsMadeWithItsParentsAndStartsAtSegmentOne(t *testing.T) {
	w := newTestWriter(t, Options{Dir: filepath.Join(t.TempDir(), "traces", "ws", "s1")})
	w.Add(&Record{Type: TypePrompt})
	w.Close()
	names := segmentNames(t, w.Dir())
	if len(names) != 1 || names[0] != SegmentName(1) {
		t.Fatalf("segments %v, want [%s]", names, SegmentName(1))
	}
}

// A writer for a trace an earlier process left (the directory exists)
// keeps its segments and begins the next one.
func TestWriterContinuesAfterTheSegmentsAnEarlierProcessLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces", "global", "s1")
	for range 2 {
		w := newTestWriter(t, Options{Dir: dir})
		w.Add(&Record{Type: TypePrompt})
		w.Close()
	}
	names := segmentNames(t, dir)
	if len(names) != 2 || names[0] != SegmentName(1) || names[1] != SegmentName(2) {
		t.Fatalf("segments %v, want %s and %s", names, SegmentName(1), SegmentName(2))
	}
}

func segmentNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Records beyond one buffer block (blockSize), and a line larger than a
// block, reach the segment whole and in the order they were added.
func TestABurstLargerThanABufferBlockLandsWholeAndInOrder(t *testing.T) {
	w := newTestWriter(t, Options{MaxBytes: 64 << 20})
	big := strings.Repeat("x", blockSize+10)
	var want []string
	for i := range 3000 {
		text := fmt.Sprint("prompt ", i)
		if i == 1500 {
			text = big
		}
		w.Add(&Record{Type: TypePrompt, Input: &Input{Text: text}})
		want = append(want, text)
	}
	w.Close()
	data, err := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:] // after the header
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Input == nil || r.Input.Text != want[i] {
			t.Fatalf("line %d: %.80s (%v)", i, l, err)
		}
	}
}
