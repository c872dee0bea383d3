package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// exportedSession makes a session with every kind of content: messages,
// runtime records, rewritten timings, metadata, a compaction checkpoint.
func exportedSession(t *testing.T, r *Root) *Session {
	t.Helper()
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	running := PromptTiming{ID: "a", UserMessageIndex: 0, MessageStartIndex: Some(0), StartedAt: 1}
	finished := running
	finished.MessageEndIndex, finished.FinishedAt = Some(4), Some(int64(9))
	mustCommit(t, s, history(1), nil, nil, TimingAt{Index: 0, Timing: running})
	mustCommit(t, s, history(2), []RuntimeRecord{rtRecord(RuntimeCompaction, 1)}, func(h *Header) {
		h.Unread, h.Title, h.TitleSource, h.Effort, h.Permission = true, "Fix the build", TitleManual, "high", "read-only"
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude"}
		h.Compaction = &CompactionMeta{ID: "c", MessageCount: 4, TokensBefore: 1000, CreatedAt: 7}
	}, TimingAt{Index: 0, Timing: finished}, TimingAt{Index: 1, Timing: PromptTiming{UserMessageIndex: 4, StartedAt: 5, Stopped: true}})
	if _, err := s.SetPinned(true); err != nil {
		t.Fatal(err)
	}
	return s
}

func exportOf(t *testing.T, s *Session) []byte {
	t.Helper()
	h, msgs, rt, tm := s.Contents()
	b, err := EncodeExport(&h, msgs, rt, tm, 42)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExportImportRoundTripKeepsEverythingButIdsAndTheImportRecord(t *testing.T) {
	r, _ := newTestRoot(t)
	s := exportedSession(t, r)
	defer s.Close()
	data := exportOf(t, s)
	if !IsExport(data) {
		t.Fatal("IsExport does not recognise an export")
	}
	for _, absent := range []string{"messagesBytes", "messagesCrc32c", "timingsCount", "promptTimings"} {
		if bytes.Contains(data, []byte(`"`+absent+`"`)) {
			t.Errorf("the export holds %q, a detail of the files", absent)
		}
	}
	imp, err := ParseExport(data, "/x/export.json")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newTestRoot(t)
	got, existed, err := other.Import(&imp, Checksum(data), "", "")
	if err != nil || existed {
		t.Fatalf("import: %v (existed %v)", err, existed)
	}
	defer got.Close()
	if got.ID() != s.ID() {
		t.Errorf("a free id is kept: got %s, want %s", got.ID(), s.ID())
	}
	wh, wm, wrt, wt := s.Contents()
	gh, gm, grt, gt := got.Contents()
	wantMessages(t, gm, wm)
	if !reflect.DeepEqual(grt, wrt) || !reflect.DeepEqual(gt, wt) {
		t.Errorf("runtime or timings differ:\n got %+v %+v\nwant %+v %+v", grt, gt, wrt, wt)
	}
	if gh.Migration == nil || gh.Migration.From != ExportFormat || gh.Migration.SourceID != s.ID() || gh.Migration.SourcePath != "/x/export.json" {
		t.Errorf("import record %+v", gh.Migration)
	}
	// The export of the import is the export, but for the import record
	// (docs/storage.md, "The JSON export").
	again := exportOf(t, got)
	strip := func(h Header) Header {
		h.Migration, h.MessagesBytes, h.MessagesCRC, h.RuntimeBytes, h.RuntimeCRC = nil, 0, 0, 0, 0
		h.TimingsCount, h.TimingsBytes, h.TimingsCRC = 0, 0, 0
		return h
	}
	if !reflect.DeepEqual(strip(gh), strip(wh)) {
		t.Errorf("headers differ:\n got %+v\nwant %+v", strip(gh), strip(wh))
	}
	i := bytes.Index(again, []byte(`"migration"`))
	j := bytes.Index(data, []byte(`,"messages"`))
	if i < 0 || !bytes.Equal(again[bytes.Index(again, []byte(`,"messages"`)):], data[j:]) {
		t.Errorf("messages, runtime and timings of the second export differ from the first")
	}
}

func TestImportOfAnExportOfAnImportKeepsTheEarlierRecord(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.MigrateLegacyTo("testdata/legacy/session-file-with-name-compaction-bash.jsonl", "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := exportOf(t, s)
	imp, err := ParseExport(data, "/x/e.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(imp.Header.Migration.Previous), `"from":"pi-jsonl"`) {
		t.Errorf("previous record %s, want the pi migration's", imp.Header.Migration.Previous)
	}
}

func TestImportingTheSameSourceAgainFindsTheEarlierSession(t *testing.T) {
	r, _ := newTestRoot(t)
	s := exportedSession(t, r)
	data := exportOf(t, s)
	s.Close()
	other, _ := newTestRoot(t)
	for i, want := range []bool{false, true} {
		imp, err := ParseExport(data, "/x/e.json")
		if err != nil {
			t.Fatal(err)
		}
		got, existed, err := other.Import(&imp, Checksum(data), "", "")
		if err != nil || existed != want {
			t.Fatalf("import %d: existed %v, err %v; want existed %v", i+1, existed, err, want)
		}
		got.Close()
	}
	// Into the root that holds the original, the import is a new
	// session with an id made from the checksum, found again the same way.
	var ids []string
	for range 2 {
		imp, _ := ParseExport(data, "/x/e.json")
		got, _, err := r.Import(&imp, Checksum(data), "", "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got.ID())
		got.Close()
	}
	if ids[0] == s.ID() || ids[0] != ids[1] {
		t.Errorf("ids %v beside the original %s: want one new id, found again", ids, s.ID())
	}
}

func TestParseExportRefusesOtherFormatsAndVersions(t *testing.T) {
	for _, src := range []string{`{"format":"loop-export","version":2}`, `{"format":"other"}`, `[1,2]`, `{"format":"loop-export","version":1,"session":{"format":"loop-session","version":1,"messageCount":3},"messages":[]}`} {
		if _, err := ParseExport([]byte(src), "e.json"); !errors.Is(err, ErrUnsupportedFormat) && !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseExport(%s) = %v, want a refusal", src, err)
		}
	}
}

func TestImportWithAMissingDirectoryWritesNothing(t *testing.T) {
	r, _ := newTestRoot(t)
	s := exportedSession(t, r)
	data := exportOf(t, s)
	s.Close()
	imp, _ := ParseExport(data, "/x/e.json")
	imp.Header.Cwd = filepath.Join(t.TempDir(), "gone")
	other, _ := newTestRoot(t)
	if _, _, err := other.Import(&imp, Checksum(data), "", ""); !errors.Is(err, ErrCwdMissing) {
		t.Fatalf("import into a missing directory: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(other.Dir(), "sessions")); len(entries) != 0 {
		t.Errorf("the failed import left %d entries", len(entries))
	}
}

func TestRoundTripsDoNotGrowTheImportRecord(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.MigrateLegacyTo("testdata/legacy/session-file-with-name-compaction-bash.jsonl", "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for range 3 {
		data := exportOf(t, s)
		s.Close()
		imp, err := ParseExport(data, "/x/e.json")
		if err != nil {
			t.Fatal(err)
		}
		other, _ := newTestRoot(t)
		if s, _, err = other.Import(&imp, Checksum(data), "", ""); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(s.Header().Migration.Previous))
	}
	s.Close()
	if sizes[1] != sizes[2] {
		t.Errorf("previous records of %v bytes: each round trip adds to the header", sizes)
	}
}

// An import's notes, source strings, carried record and title come from
// the source file: however long they are there, header.json stays under
// 4 KB, the whole record is kept as an import.record runtime record, and
// importing the file again finds the same session.
func TestImportFromAHugeSourceKeepsHeaderSmallAndTheWholeRecord(t *testing.T) {
	r, _ := newTestRoot(t)
	notes := make([]string, 5000)
	for i := range notes {
		notes[i] = fmt.Sprintf("lines with no place in Loop's history (1 kind-%d-%s)", i, strings.Repeat("é", 300))
	}
	title := strings.Repeat("t", 100000)
	imp := &Imported{
		Header: Header{Cwd: t.TempDir(), CreatedAt: 1, UpdatedAt: 2, Title: title, TitleSource: TitleAuto,
			Model: &ModelRef{Provider: "anthropic", ID: strings.Repeat("m", 5000)}, Effort: strings.Repeat("e", 5000),
			Migration: &MigrationRecord{From: "claude-code-jsonl", SourcePath: "/src/a.jsonl", SourceID: strings.Repeat("s", 10000),
				SourceApp: "claude-code " + strings.Repeat("9", 10000), Notes: notes,
				Previous: json.RawMessage(`{"from":"x","notes":["` + strings.Repeat("p", 50000) + `"]}`)}},
		Messages: prompt(0),
	}
	sum := Checksum([]byte("source"))
	s, existed, err := r.Import(imp, sum, "", "")
	if err != nil || existed {
		t.Fatalf("Import: existed %v, %v", existed, err)
	}
	defer s.Close()
	hdr, err := os.ReadFile(filepath.Join(s.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(hdr) >= 4096 {
		t.Fatalf("header.json is %d bytes, want under 4 KB", len(hdr))
	}
	h := s.Header()
	if n := len([]rune(h.Title)); n > 200 {
		t.Errorf("title of %d runes kept in the header", n)
	}
	if len(h.Model.ID) > 64 || len(h.Effort) > 64 {
		t.Errorf("model id of %d bytes, effort of %d kept in the header", len(h.Model.ID), len(h.Effort))
	}
	for _, n := range h.Migration.Notes {
		if !utf8.ValidString(n) {
			t.Errorf("a shortened note is not UTF-8: %q", n)
		}
	}
	_, _, rt, _ := s.Contents()
	var kept []RuntimeRecord
	for _, rec := range rt {
		if rec.Type == RuntimeImportRecord {
			kept = append(kept, rec)
		}
	}
	if len(kept) != 1 {
		t.Fatalf("%d %s records, want 1", len(kept), RuntimeImportRecord)
	}
	var whole struct {
		Record struct {
			SourceID  string          `json:"sourceId"`
			SourceApp string          `json:"sourceApp"`
			Notes     []string        `json:"notes"`
			Previous  json.RawMessage `json:"previous"`
		} `json:"record"`
		Header map[string]string `json:"header"`
	}
	if err := json.Unmarshal(kept[0].Data, &whole); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(whole.Record.Notes, notes) || whole.Header["title"] != title || whole.Header["model.id"] != imp.Header.Model.ID || whole.Record.SourceID != imp.Header.Migration.SourceID ||
		whole.Record.SourceApp != imp.Header.Migration.SourceApp || !bytes.Equal(whole.Record.Previous, imp.Header.Migration.Previous) {
		t.Error("the import.record runtime record does not hold the whole record and title")
	}
	again, existed, err := r.Import(imp, sum, "", "")
	if err != nil || !existed || again.ID() != s.ID() {
		t.Fatalf("re-import: existed %v, id %s (want %s), %v", existed, again.ID(), s.ID(), err)
	}
	again.Close()
}

// An export whose timings name messages outside its history (crafted or
// damaged) is refused, writing nothing: readers walk the ranges timings
// name, and a range of 2^62 messages would cost them that much.
func TestImportRefusesTimingsOutsideTheHistory(t *testing.T) {
	for name, tm := range map[string]PromptTiming{
		"end past the history":   {UserMessageIndex: 0, MessageStartIndex: Some(0), MessageEndIndex: Some(1 << 62)},
		"start past the history": {UserMessageIndex: 0, MessageStartIndex: Some(9)},
		"start after end":        {UserMessageIndex: 0, MessageStartIndex: Some(1), MessageEndIndex: Some(0)},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			imp := &Imported{Header: Header{Cwd: t.TempDir(), CreatedAt: 1, UpdatedAt: 2,
				Migration: &MigrationRecord{From: ExportFormat, SourcePath: "/x.json"}},
				Messages: prompt(0), Timings: []PromptTiming{tm}}
			if _, _, err := r.Import(imp, Checksum([]byte(name)), "", ""); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Import = %v, want ErrInvalid", err)
			}
			if sums, err := r.List("", ListOptions{}); err != nil || len(sums) != 0 {
				t.Fatalf("List = %v, %v: a refused import wrote a session", sums, err)
			}
		})
	}
}
