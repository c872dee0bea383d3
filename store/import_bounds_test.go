package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// TestImportedHeaderAtEveryBoundStaysUnder4KB: an import at every bound
// at once (a title of 200 four-byte characters, the notes, sourceId,
// sourceApp and previous at their limits, saturated usage in all three
// totals, a long source path) still writes a header under 4 KB.
func TestImportedHeaderAtEveryBoundStaysUnder4KB(t *testing.T) {
	r, _ := newTestRoot(t)
	notes := []string{}
	for i := 0; i < 100; i++ {
		notes = append(notes, strings.Repeat("\U0001F600", 100))
	}
	imp := &Imported{Header: Header{Cwd: t.TempDir(), Title: strings.Repeat("\U0001F600", 300), TitleSource: TitleAuto,
		Model: &ModelRef{Provider: strings.Repeat("p", 1000), ID: strings.Repeat("m", 1000)}, Effort: strings.Repeat("e", 1000), Permission: strings.Repeat("r", 1000),
		Compaction: &CompactionMeta{ID: strings.Repeat("c", 1000)},
		Usage:      convo.SessionUsage{UsageSum: convo.UsageSum{Input: 1 << 60, Output: 1 << 60, CacheRead: 1 << 60, CacheWrite: 1 << 60, TotalTokens: 1 << 60, Calls: 1 << 60, Cost: 1.2345678901234567e300, Unpriced: 1 << 60}},
		Migration:  &MigrationRecord{From: "claude-code-jsonl", SourcePath: "/home/someone/.claude/projects/-home-someone-src-project/0195f0e2-7c3a-7000-8000-000000000001.jsonl", SourceID: strings.Repeat("s", 1000), SourceApp: strings.Repeat("v", 1000), Notes: notes}},
		Messages: prompt(0)}
	imp.Header.Usage.Title = imp.Header.Usage.UsageSum
	imp.Header.Usage.Compaction = imp.Header.Usage.UsageSum
	imp.Header.Migration.Previous = json.RawMessage(`{"from":"` + strings.Repeat("a", maxPreviousBytes-12) + `"}`)
	s, _, err := r.Import(imp, Checksum([]byte("x")), "", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(s.Dir(), headerFile))
	if len(b) >= 4096 {
		t.Fatalf("header.json is %d bytes:\n%s", len(b), b)
	}
	s.Close()
}
