package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The journal's golden files (testdata/golden-journal): a session that
// committed one round, and the journal a process killed in its second
// round left (journal.jsonl: the prompt, the assistant's tool call, the
// call's start; no result). recovered/ holds what the next open commits
// of it: the header with recovered, the timing marked interrupted.
// go test ./store -run GoldenJournal -update rewrites them.
const goldenJournalDir = "testdata/golden-journal"

var goldenJournalSession = filepath.Join("sessions", globalScope, goldenSession)

// goldenJournalFiles are the crashed session's files, relative to the root.
var goldenJournalFiles = []string{
	filepath.Join(goldenJournalSession, headerFile),
	filepath.Join(goldenJournalSession, messagesFile),
	filepath.Join(goldenJournalSession, indexFile),
	filepath.Join(goldenJournalSession, runtimeFile),
	filepath.Join(goldenJournalSession, timingsFile),
	filepath.Join(goldenJournalSession, journalFile),
}

// goldenJournalRecovered are the files the recovery rewrites.
var goldenJournalRecovered = []string{headerFile, messagesFile, timingsFile}

func writeGoldenJournal(t *testing.T) *Root {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	r.now = newTestClock().now
	r.newID = func() string { return goldenSession }
	s, err := r.Create("", "/")
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, prompt(0), nil, func(h *Header) { h.Title = "journal" },
		TimingAt{0, PromptTiming{ID: runIDOf(0), MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1795972384000, FinishedAt: Some(int64(1795972384003))}})
	journalRound(t, s, 1, 2)
	crash(s)
	return r
}

func TestGoldenJournalIsWrittenByteForByte(t *testing.T) {
	r := writeGoldenJournal(t)
	for _, rel := range goldenJournalFiles {
		compareGolden(t, filepath.Join(r.Dir(), rel), filepath.Join(goldenJournalDir, rel))
	}
	s, err := r.Open("", goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range goldenJournalRecovered {
		compareGolden(t, filepath.Join(s.Dir(), name), filepath.Join(goldenJournalDir, "recovered", name))
	}
}

func compareGolden(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(want, g, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v (go test ./store -run GoldenJournal -update writes it)", err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s differs from %s:\ngot\n%s\nwant\n%s", got, want, g, w)
	}
}

func TestGoldenJournalRecoversAsWritten(t *testing.T) {
	r, err := OpenRoot(copyGoldenFrom(t, goldenJournalDir, goldenJournalFiles))
	if err != nil {
		t.Fatal(err)
	}
	r.now = newTestClock().now
	s, err := r.Open("", goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, err := OpenRoot(copyGoldenFrom(t, filepath.Join(goldenJournalDir, "recovered"), goldenJournalRecovered))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range goldenJournalRecovered {
		got, _ := os.ReadFile(filepath.Join(s.Dir(), name))
		w, _ := os.ReadFile(filepath.Join(want.Dir(), name))
		if !bytes.Equal(got, w) {
			t.Errorf("recovered %s:\ngot\n%s\nwant\n%s", name, got, w)
		}
	}
	h := s.Header()
	if !reflect.DeepEqual(h.Recovered, &RecoveredRun{RunID: runIDOf(1), Messages: 3, InterruptedAt: 1795972385001}) {
		t.Errorf("recovered %+v", h.Recovered)
	}
	if ts := s.Timings(); len(ts) != 2 || !ts[1].Interrupted {
		t.Errorf("timings %+v", ts)
	}
}
