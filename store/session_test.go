package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

func TestInMemoryNeverTouchesDisk(t *testing.T) {
	cwd := t.TempDir()
	s := InMemory(cwd)
	if s.Persistent() || s.IsDraft() || s.Dir() != "" {
		t.Fatalf("in-memory session: persistent=%v draft=%v dir=%q", s.Persistent(), s.IsDraft(), s.Dir())
	}
	h := history(2)
	mustCommit(t, s, h, []RuntimeRecord{rtRecord("x", 1)}, func(h *Header) { h.Unread = true; h.Title = "t" })
	wantMessages(t, s.Messages(), h)
	if got := s.Header(); got.MessageCount != 8 || got.UserMessageCount != 2 || !got.Unread || got.Title != "t" || got.Cwd != cwd {
		t.Fatalf("header %+v", got)
	}
	if ok, err := s.MarkRead(8); !ok || err != nil {
		t.Fatalf("MarkRead = %v, %v", ok, err)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Fatalf("in-memory session wrote %v", entries)
	}
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateWritesHeaderAtOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	s, err := r.Create("", cwd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.IsDraft() || !s.Persistent() || s.ReadOnly() {
		t.Fatalf("draft=%v persistent=%v readonly=%v", s.IsDraft(), s.Persistent(), s.ReadOnly())
	}
	want := filepath.Join(r.Dir(), "sessions", "global", s.ID())
	if s.Dir() != want {
		t.Fatalf("dir %s, want %s", s.Dir(), want)
	}
	files := snapshotDir(t, s.Dir())
	for _, name := range []string{headerFile, messagesFile, indexFile, runtimeFile} {
		if _, ok := files[name]; !ok {
			t.Fatalf("missing %s in %v", name, files)
		}
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(files[headerFile]), &h); err != nil {
		t.Fatal(err)
	}
	if h["format"] != FormatName || h["version"] != 1.0 || h["id"] != s.ID() || h["workspaceId"] != nil || h["cwd"] != cwd {
		t.Fatalf("header %v", h)
	}
	// Permissions: directories 0700, files 0600.
	for _, p := range []string{r.Dir(), filepath.Join(r.Dir(), "sessions"), filepath.Dir(s.Dir()), s.Dir()} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	for name := range files {
		if fi, _ := os.Stat(filepath.Join(s.Dir(), name)); fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", name, fi.Mode())
		}
	}
	// The id is a uuid v7.
	if s.ID()[14] != '7' {
		t.Fatalf("id %s is not a uuid v7", s.ID())
	}
}

func TestCreateRejectsMissingCwd(t *testing.T) {
	r, _ := newTestRoot(t)
	if _, err := r.Create("", filepath.Join(t.TempDir(), "gone")); !errors.Is(err, ErrCwdMissing) {
		t.Fatalf("err %v", err)
	}
	if _, err := r.Create("../etc", t.TempDir()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad workspace id: %v", err)
	}
}

func TestDraftWritesNothingUntilUserMessage(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, err := r.AddWorkspace(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	s := r.Draft(ws.ID, ws.Cwd)
	defer s.Close()
	if !s.IsDraft() || !s.Persistent() {
		t.Fatal("not a draft")
	}
	id, dir := s.ID(), s.Dir()
	if dir != filepath.Join(r.Dir(), "sessions", ws.ID, id) {
		t.Fatalf("target dir %s", dir)
	}
	// Metadata edits wait in memory.
	if err := s.SaveMeta(func(h *Header) { h.Model = &ModelRef{Provider: "p", ID: "m"}; h.Title = "draft title" }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPinned(true); err != nil {
		t.Fatal(err)
	}
	// A commit without a user message stays in memory too.
	sys := []convo.Message{{Role: convo.RoleAssistant, Timestamp: 1, Content: []convo.Block{{Type: convo.BlockText, Text: "hello"}}}}
	mustCommit(t, s, sys, nil, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("draft wrote %s: %v", dir, err)
	}
	if ok, _ := s.MarkRead(1); ok {
		t.Fatal("MarkRead on a draft returned true")
	}
	if sums, err := r.List(ws.ID, ListOptions{}); err != nil || len(sums) != 0 {
		t.Fatalf("draft listed: %v %v", sums, err)
	}
	if _, err := r.Find(id); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Find draft: %v", err)
	}
	// An attachment-only user message qualifies.
	user := convo.Message{Role: convo.RoleUser, Timestamp: 2, Content: []convo.Block{{Type: convo.BlockImage, Data: "aGk=", MimeType: "image/png"}}}
	all := append(sys, user)
	mustCommit(t, s, all, []RuntimeRecord{rtRecord("r", 1)}, func(h *Header) { h.Unread = true })
	if s.IsDraft() || s.ID() != id || s.Dir() != dir {
		t.Fatalf("after first commit: draft=%v id=%s dir=%s", s.IsDraft(), s.ID(), s.Dir())
	}
	o := reopen(t, r, s)
	wantMessages(t, o.Messages(), all)
	h := o.Header()
	if h.Title != "draft title" || h.Model == nil || h.Model.ID != "m" || h.PinnedAt == nil || !h.Unread ||
		h.MessageCount != 2 || h.UserMessageCount != 1 || h.RuntimeCount != 1 || *h.WorkspaceID != ws.ID {
		t.Fatalf("accumulated metadata lost: %+v", h)
	}
	if len(o.Runtime()) != 1 {
		t.Fatalf("runtime %v", o.Runtime())
	}
}

func TestDraftUnsentDoesNotSurvive(t *testing.T) {
	r, _ := newTestRoot(t)
	s := r.Draft("", t.TempDir())
	s.SaveMeta(func(h *Header) { h.Title = "x" })
	s.Close()
	if entries, err := os.ReadDir(r.Dir()); err == nil && len(entries) > 0 {
		t.Fatalf("unsent draft left %v", entries)
	}
}

func TestDraftWithBadArgumentsFailsOnWrite(t *testing.T) {
	r, _ := newTestRoot(t)
	s := r.Draft("not-a-uuid", t.TempDir())
	if err := s.Commit(history(1), nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
	if !s.IsDraft() || len(s.Messages()) != 0 {
		t.Fatal("failed draft commit changed the session")
	}
}

func TestCommitAppendsAndOpenRestoresExactly(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	s, err := r.Create("", cwd)
	if err != nil {
		t.Fatal(err)
	}
	var want []convo.Message
	var rts []RuntimeRecord
	for i := range 5 {
		want = append(want, prompt(i)...)
		rt := []RuntimeRecord{rtRecord("compaction", i)}
		rts = append(rts, rt...)
		mustCommit(t, s, want, rt, func(h *Header) { h.Unread = true },
			TimingAt{Index: i, Timing: PromptTiming{ID: "t", UserMessageIndex: 4 * i, MessageStartIndex: Some(4 * i), MessageEndIndex: Some(4*i + 4), StartedAt: 50, FinishedAt: Some(int64(100 + i))}})
	}
	wantMessages(t, s.Messages(), want)
	h := s.Header()
	if h.MessageCount != 20 || h.UserMessageCount != 5 || h.RuntimeCount != 5 || len(s.Timings()) != 5 || h.TimingsCount != 5 {
		t.Fatalf("header %+v", h)
	}
	o := reopen(t, r, s)
	if !o.ReadOnly() {
		t.Fatal("second open of a locked session is writable")
	}
	wantMessages(t, o.Messages(), want)
	if got := o.Runtime(); len(got) != 5 || string(got[4].Data) != `{"n":4}` {
		t.Fatalf("runtime %v", got)
	}
	oh := o.Header()
	if oh.MessagesBytes != h.MessagesBytes || oh.MessagesCRC != h.MessagesCRC || len(o.Timings()) != 5 || o.Timings()[4].FinishedAt != Some(int64(104)) {
		t.Fatalf("reopened header %+v", oh)
	}
	// After Close the session opens writable and keeps committing.
	s.Close()
	o2, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if o2.ReadOnly() {
		t.Fatal("read-only after the writer closed")
	}
	want = append(want, prompt(5)...)
	mustCommit(t, o2, want, nil, nil)
	wantMessages(t, reopen(t, r, o2).Messages(), want)
	// Paging through the index reads the same messages.
	page, err := r.ReadMessages("", s.ID(), 5, 13)
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, page, want[5:13])
	rounds, err := r.Rounds("", s.ID())
	if err != nil || len(rounds) != 6 || rounds[5] != 20 {
		t.Fatalf("rounds %v %v", rounds, err)
	}
	if _, err := r.ReadMessages("", s.ID(), 3, 99); !errors.Is(err, ErrInvalid) {
		t.Fatalf("out of range page: %v", err)
	}
}

func TestCommitRejectsHistoryThatDoesNotExtend(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	defer s.Close()
	mustCommit(t, s, history(2), nil, nil)
	if err := s.Commit(history(1), nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shorter history: %v", err)
	}
	other := history(3)
	other[7].Timestamp++
	if err := s.Commit(other, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("different history: %v", err)
	}
	bad := append(history(2), convo.Message{Role: "system", Content: []convo.Block{}})
	if err := s.Commit(bad, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown role: %v", err)
	}
	if err := s.Commit(history(2), []RuntimeRecord{{Data: json.RawMessage(`{}`)}}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("untyped runtime record: %v", err)
	}
	if err := s.Commit(history(2), nil, func(h *Header) { h.TitleSource = "robot" }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad title source: %v", err)
	}
	if len(s.Messages()) != 8 {
		t.Fatal("rejected commits changed history")
	}
}

func TestCommitUpdatedAtAndOwnedFields(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	defer s.Close()
	h0 := s.Header()
	// New messages bump UpdatedAt.
	mustCommit(t, s, history(1), nil, nil)
	h1 := s.Header()
	if h1.UpdatedAt <= h0.UpdatedAt {
		t.Fatalf("updatedAt %d -> %d", h0.UpdatedAt, h1.UpdatedAt)
	}
	// A commit with no new messages keeps it; edit cannot touch owned fields.
	mustCommit(t, s, history(1), nil, func(h *Header) {
		h.ID, h.Cwd, h.MessageCount, h.MessagesBytes, h.CreatedAt = "x", "/elsewhere", 99, 1, 5
		h.Title = "kept"
	})
	h2 := s.Header()
	if h2.UpdatedAt != h1.UpdatedAt || h2.ID != h1.ID || h2.Cwd != h1.Cwd || h2.MessageCount != 4 ||
		h2.MessagesBytes != h1.MessagesBytes || h2.CreatedAt != h1.CreatedAt || h2.Title != "kept" {
		t.Fatalf("header %+v", h2)
	}
	// edit may set UpdatedAt itself.
	mustCommit(t, s, history(2), nil, func(h *Header) { h.UpdatedAt = 42 })
	if s.Header().UpdatedAt != 42 {
		t.Fatal("edit's UpdatedAt ignored")
	}
	// Header() is a copy; Timings() is capped, so appending to it does
	// not reach the session's.
	c := s.Header()
	c.Title = "mutated"
	_ = append(s.Timings(), PromptTiming{})
	if s.Header().Title == "mutated" || len(s.Timings()) != 0 {
		t.Fatal("Header() shares state")
	}
}

func TestOpenValidation(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	s, _ := r.Create("", cwd)
	mustCommit(t, s, history(2), nil, nil)
	s.Close()
	dir := s.Dir()

	if _, err := r.Open("", newID()); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := r.Open("", "../../x"); !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("bad id: %v", err)
	}
	// OpenDir accepts the directory or its header.json.
	for _, p := range []string{dir, filepath.Join(dir, headerFile)} {
		o, err := r.OpenDir(p)
		if err != nil {
			t.Fatalf("OpenDir(%s): %v", p, err)
		}
		o.Close()
	}

	corrupt := func(name string, change func([]byte) []byte) error {
		t.Helper()
		path := filepath.Join(dir, name)
		orig, _ := os.ReadFile(path)
		os.WriteFile(path, change(append([]byte(nil), orig...)), 0o600)
		defer os.WriteFile(path, orig, 0o600)
		before := snapshotDir(t, dir)
		_, err := r.Open("", s.ID())
		if after := snapshotDir(t, dir); len(after) != len(before) || after[name] != before[name] {
			t.Fatalf("Open changed files of a malformed session")
		}
		return err
	}
	cases := []struct {
		name, file, want string
		change           func([]byte) []byte
	}{
		{"bad header JSON", headerFile, "not a JSON object", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped message byte", messagesFile, "checksum", func(b []byte) []byte { b[10] ^= 1; return b }},
		{"log shorter than header", messagesFile, "header names", func(b []byte) []byte { return b[:len(b)-5] }},
		{"index mismatch", indexFile, "record 1", func(b []byte) []byte { b[16] ^= 1; return b }},
		{"index missing bytes", indexFile, "header names", func(b []byte) []byte { return b[:len(b)-1] }},
		{"header count wrong", headerFile, "userMessageCount", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"userMessageCount":2`, `"userMessageCount":1`, 1))
		}},
		{"bad title source", headerFile, "titleSource", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"unread"`, `"titleSource":"x","unread"`, 1))
		}},
	}
	for _, c := range cases {
		err := corrupt(c.file, c.change)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want ErrMalformed naming %s and %q", c.name, err, c.file, c.want)
		}
	}
	// A missing log file.
	os.Rename(filepath.Join(dir, runtimeFile), filepath.Join(dir, "x"))
	if _, err := r.Open("", s.ID()); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), runtimeFile) {
		t.Errorf("missing runtime.jsonl: %v", err)
	}
	os.Rename(filepath.Join(dir, "x"), filepath.Join(dir, runtimeFile))
	// The stored cwd must exist.
	os.Remove(cwd)
	if _, err := r.Open("", s.ID()); !errors.Is(err, ErrCwdMissing) || !strings.Contains(err.Error(), cwd) {
		t.Errorf("missing cwd: %v", err)
	}
	os.Mkdir(cwd, 0o700)
	// A header in the wrong place (copied into another session's directory).
	other := filepath.Join(filepath.Dir(dir), newID())
	os.Mkdir(other, 0o700)
	for name, content := range snapshotDir(t, dir) {
		os.WriteFile(filepath.Join(other, name), []byte(content), 0o600)
	}
	if _, err := r.OpenDir(other); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "does not match directory") {
		t.Errorf("misplaced header: %v", err)
	}
}

func TestOpenOtherFormatIsNotFound(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	s.Close()
	hpath := filepath.Join(s.Dir(), headerFile)
	for _, content := range []string{
		`{"format":"loop-session","version":3,"id":"x"}`,
		`{"format":"something-else"}`,
		`{"type":"session","version":3}`,
	} {
		os.WriteFile(hpath, []byte(content), 0o600)
		_, err := r.Open("", s.ID())
		if !errors.Is(err, ErrSessionNotFound) || !errors.Is(err, ErrUnsupportedFormat) {
			t.Errorf("%s: %v", content, err)
		}
		if _, err := r.Find(s.ID()); !errors.Is(err, ErrSessionNotFound) {
			t.Errorf("Find %s: %v", content, err)
		}
		if b, _ := os.ReadFile(hpath); string(b) != content {
			t.Errorf("other format changed")
		}
	}
}

func TestOpenIgnoresUncommittedTail(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(2), []RuntimeRecord{rtRecord("a", 1)}, nil)
	s.Close()
	// A crash mid-append leaves a torn line after the committed range.
	for _, name := range []string{messagesFile, runtimeFile, indexFile} {
		f, _ := os.OpenFile(filepath.Join(s.Dir(), name), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"role":"user","content":[{"type":"te`)
		f.Close()
	}
	o, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	wantMessages(t, o.Messages(), history(2))
	// The next commit truncates the tail and loses nothing.
	mustCommit(t, o, history(3), []RuntimeRecord{rtRecord("b", 2)}, nil)
	c := reopen(t, r, o)
	wantMessages(t, c.Messages(), history(3))
	if len(c.Runtime()) != 2 {
		t.Fatalf("runtime %v", c.Runtime())
	}
	fi, _ := os.Stat(filepath.Join(o.Dir(), messagesFile))
	if fi.Size() != c.Header().MessagesBytes {
		t.Fatalf("tail not truncated: %d bytes, committed %d", fi.Size(), c.Header().MessagesBytes)
	}
}

func TestContinueRecent(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "w")
	// None yet: creates one.
	s1, err := r.ContinueRecent(ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s1, history(1), nil, nil)
	s1.Close()
	s2, _ := r.Create(ws.ID, ws.Cwd)
	mustCommit(t, s2, history(1), nil, nil)
	s2.Close()
	got, err := r.ContinueRecent(ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != s2.ID() {
		t.Fatalf("continued %s, want the newest %s", got.ID(), s2.ID())
	}
	// Archived sessions are not continued.
	got.SetArchived(true)
	got.Close()
	got, _ = r.ContinueRecent(ws.ID, ws.Cwd)
	defer got.Close()
	if got.ID() != s1.ID() {
		t.Fatalf("continued %s, want %s", got.ID(), s1.ID())
	}
}

// Long logs decode in parallel; the result and the error reports are the
// same as sequential decoding.
func TestOpenLongHistoryParallelDecode(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	h := history(400) // 1,600 messages
	mustCommit(t, s, h, nil, nil)
	if sum := s.Summary(); sum.MessageCount != 1600 || sum.UserMessageCount != 400 || sum.ID != s.ID() {
		t.Fatalf("summary %+v", sum)
	}
	s.Close()
	o, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, o.Messages(), h)
	o.Close()
	// A bad line in the second half is reported with its line number (the
	// checksum is fixed up so that decoding is what fails).
	mpath := filepath.Join(s.Dir(), messagesFile)
	data, _ := os.ReadFile(mpath)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1500] = strings.Replace(lines[1500], `"role":"user"`, `"role":"uzer"`, 1)
	bad := strings.Join(lines, "")
	os.WriteFile(mpath, []byte(bad), 0o600)
	hdr, _ := r.ReadHeader("", s.ID())
	hdr.MessagesBytes = int64(len(bad))
	hdr.MessagesCRC = fsys.CRC32C(0, []byte(bad))
	hb, _ := encodeHeader(&hdr, nil)
	os.WriteFile(filepath.Join(s.Dir(), headerFile), hb, 0o600)
	_, err = r.Open("", s.ID())
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 1501") {
		t.Fatalf("err %v", err)
	}
}

func TestHeaderValidation(t *testing.T) {
	good := newHeader(newID(), "", "/tmp", 1)
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	bad := "not-a-time"
	cases := map[string]func(h *Header){
		"format":        func(h *Header) { h.Format = "x" },
		"id":            func(h *Header) { h.ID = "x" },
		"workspace":     func(h *Header) { w := "x"; h.WorkspaceID = &w },
		"cwd":           func(h *Header) { h.Cwd = "rel" },
		"timestamp":     func(h *Header) { h.CreatedAt = -1 },
		"pinnedAt":      func(h *Header) { h.PinnedAt = &bad },
		"archivedAt":    func(h *Header) { h.ArchivedAt = &bad },
		"counts":        func(h *Header) { h.MessageCount = -1 },
		"users":         func(h *Header) { h.UserMessageCount = 1 },
		"bytes":         func(h *Header) { h.MessageCount, h.MessagesBytes = 2, 2 },
		"empty bytes":   func(h *Header) { h.MessagesBytes = 10 },
		"runtime":       func(h *Header) { h.RuntimeCount = 1 },
		"crc":           func(h *Header) { h.MessagesCRC = 7 },
		"timings":       func(h *Header) { h.TimingsCount = 1 },
		"timings bytes": func(h *Header) { h.TimingsCount, h.TimingsBytes = 2, 5 },
		"timings crc":   func(h *Header) { h.TimingsCRC = 7 },
		"compaction":    func(h *Header) { h.Compaction = &CompactionMeta{MessageCount: 1} },
		"title source":  func(h *Header) { h.TitleSource = "x" },
		"updatedAt neg": func(h *Header) { h.UpdatedAt = -5 },
	}
	for name, change := range cases {
		h := good.clone()
		change(&h)
		if err := h.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
