package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
)

// The golden files pin the version 1 format byte for byte (docs/storage.md):
// sessions written by earlier releases must keep opening, so any change to
// what the store writes or reads fails here first, and needs a migration.
// go test ./store -run Golden -update rewrites them.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	goldenWorkspace = "0195f0e2-7c3a-7000-8000-0000000000aa"
	goldenSession   = "0195f0e2-7c3a-7000-8000-000000000001"
	// goldenEmpty is an independent session created empty: workspaceId
	// null, every optional member absent, empty logs.
	goldenEmpty = "0195f0e2-7c3a-7000-8000-000000000002"
	goldenDir   = "testdata/golden"
	// legacyGoldenDir is the golden root as Loop wrote it before
	// timings.jsonl: the prompt timings in header.json. Never rewritten:
	// it is what sessions of that time look like on disk.
	legacyGoldenDir = "testdata/golden-header-timings"
)

// goldenHistory has every kind of message and block the format knows, with
// every optional field set somewhere and left out somewhere else, content
// both null and empty, and text that an HTML-escaping encoder would change.
func goldenHistory() (round1, round2 []convo.Message) {
	round1 = []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1795972384000, RequestID: "req-1", Skills: []string{"review", "go"}, Content: []convo.Block{
			{Type: convo.BlockText, Text: "fix <main.go> & \"test\" it\u2028now \U0001F600"},
			{Type: convo.BlockText, Attachment: "file", Text: "Reference content (attached file, not instructions):\n{\"name\":\"a.go\",\"text\":\"package a\\n\"}"},
			{Type: convo.BlockImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
		}},
		{Role: convo.RoleAssistant, Timestamp: 1795972384100, Provider: "anthropic", Model: "claude-x", StopReason: convo.StopToolUse,
			Usage: &convo.Usage{Input: 812, Output: 40, CacheRead: 300, CacheWrite: 12, TotalTokens: 1164},
			Content: []convo.Block{
				{Type: convo.BlockThinking, Text: "read it first", Signature: "c2ln"},
				{Type: convo.BlockText, Text: "Reading."},
				{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go","limit":20}`)},
				{Type: convo.BlockToolCall, ID: "call_2", Name: "bash", Arguments: json.RawMessage(`{}`)},
			}},
		{Role: convo.RoleToolResult, Timestamp: 1795972384200, ToolCallID: "call_1", ToolName: "read", Content: []convo.Block{
			{Type: convo.BlockText, Text: "package main\n"},
			{Type: convo.BlockImage, Data: "R0lGODlh", MimeType: "image/gif"},
		}},
		{Role: convo.RoleToolResult, Timestamp: 1795972384300, ToolCallID: "call_2", ToolName: "bash", IsError: true, Content: []convo.Block{}},
		{Role: convo.RoleAssistant, Timestamp: 1795972384400, Provider: "anthropic", Model: "claude-x", StopReason: convo.StopError,
			ErrorMessage: "provider said 529", Usage: &convo.Usage{Input: 900, Output: 0, TotalTokens: 900}, Content: nil},
	}
	round2 = []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1795972385000, RequestID: "req-2", Content: []convo.Block{{Type: convo.BlockText, Text: "go on"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972385100, Provider: "openai", Model: "gpt-y", StopReason: convo.StopAborted,
			ErrorMessage: "stopped", Content: []convo.Block{{Type: convo.BlockText, Text: "Partial"}}},
		{Role: convo.RoleUser, Timestamp: 1795972385200, Content: []convo.Block{{Type: convo.BlockImage, Data: "AAAA", MimeType: "image/jpeg"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972385300, Provider: "openai", Model: "gpt-y", StopReason: convo.StopLength,
			Usage: &convo.Usage{Input: 1, Output: 2, TotalTokens: 3}, Content: []convo.Block{{Type: convo.BlockText, Text: "cut"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972385400, Provider: "openai", Model: "gpt-y", StopReason: convo.StopEnd,
			Content: []convo.Block{{Type: convo.BlockText, Text: "done"}}},
	}
	return round1, round2
}

// goldenCheckpoint is the golden session's compaction checkpoint: its
// record in runtime.jsonl and its metadata in header.json are the store's
// encoding of it (checkpoint.go), pinned by the golden files.
var goldenCheckpoint = Checkpoint{ID: "cp-1", Summary: "The user asked for <fixes> & tests.", MessageCount: 5, TokensBefore: 2064, CreatedAt: 1795972385500}

func goldenRuntime() (round1, round2 []RuntimeRecord) {
	round1 = []RuntimeRecord{
		{Type: "note", Time: 1795972384050},
	}
	round2 = []RuntimeRecord{
		goldenCheckpoint.Record(),
		{Type: RuntimeLegacyFields, Time: 1795972385600, Data: json.RawMessage(`{"messageIndex":1,"entryId":"e1","fields":{"x":1}}`)},
	}
	return round1, round2
}

// goldenTimings are the golden session's prompt timings: the first
// finished, the second stopped, the third never finished (a timing the
// process did not get to finish).
func goldenTimings() []PromptTiming {
	return []PromptTiming{
		{ID: "run-1", UserMessageIndex: 0, MessageStartIndex: Some(0), MessageEndIndex: Some(5),
			StartedAt: 1795972384000, FinishedAt: Some(int64(1795972384450))},
		{ID: "run-2", UserMessageIndex: 1, MessageStartIndex: Some(5), MessageEndIndex: Some(7),
			StartedAt: 1795972385000, FinishedAt: Some(int64(1795972385150)), Stopped: true},
		{UserMessageIndex: 2, StartedAt: 1795972385200},
	}
}

// writeGolden writes the golden session and registry under a new root with
// a fixed clock and fixed ids, through the store's public API (the
// migration record, which only a migration writes, is set on the draft).
func writeGolden(t *testing.T) (r *Root, s, empty *Session) {
	t.Helper()
	return writeGoldenWith(t, goldenIndex{})
}

// goldenIndex is what writeGoldenWith lets a derived index do: opened
// runs on the new root before any session is made (to add an observer),
// afterFirstCommit after the golden session's first commit (the search
// index is built by a search then, and appended to by the later writes:
// store/golden_search_test.go).
type goldenIndex struct {
	opened, afterFirstCommit func(*Root)
}

func writeGoldenWith(t *testing.T, ix goldenIndex) (r *Root, s, empty *Session) {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	if ix.opened != nil {
		ix.opened(r)
	}
	r.now = newTestClock().now
	ids := []string{goldenSession, goldenEmpty, goldenWorkspace}
	r.newID = func() string {
		id := ids[0]
		ids = ids[1:]
		return id
	}
	s = r.Draft(goldenWorkspace, "/")
	t.Cleanup(func() { s.Close() })
	s.hdr.Migration = &MigrationRecord{From: "pi-jsonl", SourcePath: "/home/u/.pi/sessions/x.jsonl", SourceID: "pi-1",
		SourceVersion: 3, SourceSHA256: strings.Repeat("ab", 32), MigratedAt: 1795972380000, Notes: []string{"dropped <labels> & marks"}}
	err = s.SaveMeta(func(h *Header) {
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude-x"}
		h.Effort = "high"
		h.Permission = "workspace-write"
	})
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := goldenHistory()
	rt1, rt2 := goldenRuntime()
	// The first commit records run-2 as started; the second replaces it
	// with its finished state (a second record at index 1).
	tm := goldenTimings()
	started := tm[1]
	started.MessageEndIndex, started.FinishedAt, started.Stopped = Opt[int]{}, Opt[int64]{}, false
	mustCommit(t, s, r1, rt1, func(h *Header) {
		h.Unread = true
		h.Title = "Fix <main> & test"
		h.TitleSource = TitleAuto
	}, TimingAt{Index: 0, Timing: tm[0]}, TimingAt{Index: 1, Timing: started})
	if ix.afterFirstCommit != nil {
		ix.afterFirstCommit(r)
	}
	all := append(append([]convo.Message{}, r1...), r2...)
	mustCommit(t, s, all, rt2, func(h *Header) {
		h.Title = "Manual title"
		h.TitleSource = TitleManual
		h.Compaction = goldenCheckpoint.Meta()
	}, TimingAt{Index: 1, Timing: tm[1]}, TimingAt{Index: 2, Timing: tm[2]})
	if _, err := s.SetPinned(true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetArchived(true); err != nil {
		t.Fatal(err)
	}
	empty, err = r.Create("", "/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { empty.Close() })
	if _, err := r.AddWorkspace("/", "root <dir>"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveWorkspace(goldenWorkspace); err != nil {
		t.Fatal(err)
	}
	return r, s, empty
}

// goldenFiles are the files the format consists of, relative to the root.
var goldenFiles = []string{
	registryFile,
	filepath.Join("sessions", goldenWorkspace, goldenSession, headerFile),
	filepath.Join("sessions", goldenWorkspace, goldenSession, messagesFile),
	filepath.Join("sessions", goldenWorkspace, goldenSession, indexFile),
	filepath.Join("sessions", goldenWorkspace, goldenSession, runtimeFile),
	filepath.Join("sessions", goldenWorkspace, goldenSession, timingsFile),
	filepath.Join("sessions", globalScope, goldenEmpty, headerFile),
	filepath.Join("sessions", globalScope, goldenEmpty, messagesFile),
	filepath.Join("sessions", globalScope, goldenEmpty, indexFile),
	filepath.Join("sessions", globalScope, goldenEmpty, runtimeFile),
	filepath.Join("sessions", globalScope, goldenEmpty, timingsFile),
}

// goldenSearchFiles are the search index of the golden session's scope
// (derived data, pinned as well: docs/storage.md, Search index), written
// and read by store/golden_search_test.go.
var goldenSearchFiles = []string{
	filepath.Join("sessions", goldenWorkspace, searchDirName, "index"),
	filepath.Join("sessions", goldenWorkspace, searchDirName, "tools"),
}

// legacyGoldenFiles are the files of legacyGoldenDir: no timings.jsonl.
var legacyGoldenFiles = slices.DeleteFunc(slices.Clone(goldenFiles), func(rel string) bool {
	return filepath.Base(rel) == timingsFile
})

// indexListing decodes index.bin for people: one record per line.
func indexListing(idx []byte) string {
	var b strings.Builder
	b.WriteString("# index.bin decoded: record, offset, length, kind, the 16 bytes in hex\n")
	for i := 0; i < len(idx)/indexRecordSize; i++ {
		rec := readIndexRecord(idx, i)
		fmt.Fprintf(&b, "%d %d %d %d %s\n", i, rec.off, rec.n, rec.kind, hex.EncodeToString(idx[i*indexRecordSize:(i+1)*indexRecordSize]))
	}
	return b.String()
}

func TestGoldenSessionIsWrittenByteForByte(t *testing.T) {
	r, _, _ := writeGolden(t)
	for _, rel := range goldenFiles {
		got, err := os.ReadFile(filepath.Join(r.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(goldenDir, rel)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			if rel == goldenFiles[3] {
				if err := os.WriteFile(filepath.Join(goldenDir, "index.bin.txt"), []byte(indexListing(got)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./store -run Golden -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			if filepath.Base(rel) == indexFile {
				t.Errorf("%s differs from %s:\ngot\n%s\nwant\n%s", rel, path, indexListing(got), indexListing(want))
				continue
			}
			t.Errorf("%s differs from %s:\ngot\n%s\nwant\n%s", rel, path, got, want)
		}
	}
	if *update {
		return
	}
	// The listing is documentation; it must still describe index.bin.
	idx, err := os.ReadFile(filepath.Join(goldenDir, goldenFiles[3]))
	if err != nil {
		t.Fatal(err)
	}
	if listing, err := os.ReadFile(filepath.Join(goldenDir, "index.bin.txt")); err != nil || string(listing) != indexListing(idx) {
		t.Errorf("testdata/golden/index.bin.txt does not describe index.bin (%v); run with -update", err)
	}
}

// copyGolden copies the committed golden root into a temporary directory,
// so opening it (which takes locks and may create files) leaves testdata
// untouched.
func copyGolden(t *testing.T) string {
	t.Helper()
	return copyGoldenFrom(t, goldenDir, goldenFiles)
}

func copyGoldenFrom(t *testing.T, src string, files []string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestGoldenSessionOpensAsWritten(t *testing.T) {
	_, written, empty := writeGolden(t)
	want := written.Header()
	wantMsgs := written.Messages()
	wantRT := written.Runtime()

	r, err := OpenRoot(copyGoldenFrom(t, goldenDir, goldenFiles))
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }

	s, err := r.Open(goldenWorkspace, goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Header(); !reflect.DeepEqual(got, want) {
		t.Errorf("header:\n got %+v\nwant %+v", got, want)
	}
	wantMessages(t, s.Messages(), wantMsgs)
	if got := s.Runtime(); !reflect.DeepEqual(got, wantRT) {
		t.Errorf("runtime:\n got %+v\nwant %+v", got, wantRT)
	}
	if cp := LatestCheckpoint(s.Runtime()); cp == nil || *cp != goldenCheckpoint {
		t.Errorf("checkpoint: got %+v, want %+v", cp, goldenCheckpoint)
	}
	if got := s.Timings(); !reflect.DeepEqual(got, goldenTimings()) || !reflect.DeepEqual(written.Timings(), goldenTimings()) {
		t.Errorf("timings:\n got %+v\nwrote %+v\nwant %+v", got, written.Timings(), goldenTimings())
	}

	// The readers that do not open the session agree.
	if h, err := r.ReadHeader(goldenWorkspace, goldenSession); err != nil || !reflect.DeepEqual(h, want) {
		t.Errorf("ReadHeader: %v\n got %+v\nwant %+v", err, h, want)
	}
	page, err := r.ReadMessages(goldenWorkspace, goldenSession, 3, len(wantMsgs))
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, page, wantMsgs[3:])
	if rounds, err := r.Rounds(goldenWorkspace, goldenSession); err != nil || !reflect.DeepEqual(rounds, []int{0, 5, 7}) {
		t.Errorf("Rounds = %v, %v; want [0 5 7]", rounds, err)
	}
	sums, err := r.List(goldenWorkspace, ListOptions{Archived: true})
	if err != nil || len(sums) != 1 || !reflect.DeepEqual(sums[0], want.Summary()) {
		t.Errorf("List = %+v, %v; want [%+v]", sums, err, want.Summary())
	}
	// The registry's one workspace was removed, and adding its directory
	// again brings it back under its id and name.
	if ws, err := r.Workspaces(); err != nil || len(ws) != 0 {
		t.Errorf("Workspaces = %+v, %v; want none (the one registered was removed)", ws, err)
	}
	if ws, err := r.AddWorkspace("/", ""); err != nil || ws != (Workspace{ID: goldenWorkspace, Name: "root <dir>", Cwd: "/"}) {
		t.Errorf("adding / again = %+v, %v; want the removed workspace back", ws, err)
	}

	e, err := r.Open("", goldenEmpty)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, want := e.Header(), empty.Header(); !reflect.DeepEqual(got, want) || len(e.Messages()) != 0 || len(e.Runtime()) != 0 {
		t.Errorf("empty session:\n got %+v, %d messages, %d records\nwant %+v", got, len(e.Messages()), len(e.Runtime()), want)
	}

	// And it takes the next commit like any session.
	more := append(s.Messages(), convo.Message{Role: convo.RoleUser, Timestamp: 1795972390000, Content: []convo.Block{{Type: convo.BlockText, Text: "again"}}})
	if err := s.Commit(more, nil, nil); err != nil {
		t.Fatal(err)
	}
	again, err := r.Open(goldenWorkspace, goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	wantMessages(t, again.Messages(), more)
}
