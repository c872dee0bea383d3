package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ageTrace makes every file of a trace directory look a year old.
func ageTrace(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-365 * 24 * time.Hour)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.Chtimes(filepath.Join(dir, f.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

func traceText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// A session open for longer than the retention window (or reopened just
// as the sweep runs) keeps its trace: the sweep skips a directory a writer
// holds, and the writer's next records land in it.
func TestRetentionSweepLeavesATraceBeingWritten(t *testing.T) {
	root := filepath.Join(t.TempDir(), "traces")
	dir := filepath.Join(root, "global", "s1")
	w := newTestWriter(t, Options{Dir: dir, SessionID: "s1"})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "first"}})
	w.Flush()
	ageTrace(t, dir)

	Prune(root, time.Now(), func(d string, err error) { t.Errorf("prune %s: %v", d, err) })
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "second"}})
	w.Flush()
	text := traceText(t, dir)
	if !strings.Contains(text, "first") || !strings.Contains(text, "second") {
		t.Fatalf("the trace being written lost records to the sweep:\n%s", text)
	}
}

// Once its writer is closed, an old trace goes, and one the sweep left
// half removed (a crash) goes with the next sweep; a recent one stays.
func TestRetentionSweepRemovesOldTracesNoOneWrites(t *testing.T) {
	root := filepath.Join(t.TempDir(), "traces")
	old, recent := filepath.Join(root, "global", "old"), filepath.Join(root, "w1", "recent")
	for _, dir := range []string{old, recent} {
		w := newTestWriter(t, Options{Dir: dir, SessionID: filepath.Base(dir)})
		w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "x"}})
		w.Close()
	}
	ageTrace(t, old)
	left := filepath.Join(root, "global", prunedPrefix+"gone-1")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	Prune(root, time.Now().Add(-time.Hour), func(d string, err error) { t.Errorf("prune %s: %v", d, err) })
	for dir, want := range map[string]bool{old: false, left: false, recent: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists %v after the sweep, want %v", dir, err == nil, want)
		}
	}
}

// A writer that waited while the sweep moved its directory away makes a
// new one at its place.
func TestWriterAfterTheSweepRemovedItsDirectoryWritesAtItsPlace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "traces")
	dir := filepath.Join(root, "global", "s1")
	w := newTestWriter(t, Options{Dir: dir, SessionID: "s1"})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "x"}})
	w.Close()
	ageTrace(t, dir)
	Prune(root, time.Now(), func(d string, err error) { t.Errorf("prune %s: %v", d, err) })

	w = newTestWriter(t, Options{Dir: dir, SessionID: "s1"})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "again"}})
	w.Flush()
	if !strings.Contains(traceText(t, dir), "again") {
		t.Fatal("a new writer after the sweep wrote nothing at the trace's place")
	}
}
