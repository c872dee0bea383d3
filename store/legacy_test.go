package store

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

func fileSum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func runtimeTypes(rt []RuntimeRecord) map[string]int {
	out := map[string]int{}
	for _, r := range rt {
		out[r.Type]++
	}
	return out
}

func TestMigrateLegacyAutoCompaction(t *testing.T) {
	r, _ := newTestRoot(t)
	src := "testdata/legacy/session-file-auto-compaction.jsonl"
	sum := fileSum(t, src)
	cwd := t.TempDir()
	s, err := r.MigrateLegacyTo(src, "", cwd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fileSum(t, src) != sum {
		t.Fatal("the original changed")
	}
	if s.ID() != "01a2284b-c4fe-7614-97b5-e9c387c39b50" || s.IsDraft() || s.ReadOnly() {
		t.Fatalf("id %s draft %v", s.ID(), s.IsDraft())
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[0].Role != convo.RoleUser || msgs[0].Text() != "hello threshold" || msgs[0].Timestamp != 1795972384019 {
		t.Fatalf("messages %+v", msgs)
	}
	a := msgs[1]
	if a.Role != convo.RoleAssistant || a.Provider != "mock" || a.Model != "mock-model" || a.StopReason != convo.StopEnd ||
		a.Usage == nil || a.Usage.TotalTokens != 614 || a.Text() != "Hello from mock! You said: hello threshold" {
		t.Fatalf("assistant %+v", a)
	}
	h := s.Header()
	if h.Model == nil || *h.Model != (ModelRef{"mock", "mock-model"}) || h.Effort != "off" || h.Cwd != cwd ||
		h.UserMessageCount != 1 || h.UpdatedAt != 1795972384089 || h.Unread {
		t.Fatalf("header %+v", h)
	}
	if c := h.Compaction; c == nil || c.ID != "e592c8d5" || c.MessageCount != 0 || c.TokensBefore != 614 {
		t.Fatalf("compaction %+v", c)
	}
	m := h.Migration
	abs, _ := filepath.Abs(src)
	if m == nil || m.From != "pi-jsonl" || m.SourcePath != abs || m.SourceVersion != 3 || m.SourceID != s.ID() || len(m.SourceSHA256) != 64 {
		t.Fatalf("migration %+v", m)
	}
	notes := strings.Join(m.Notes, "\n")
	for _, want := range []string{"api", "responseId", "usage.cost", "/tmp/pi/work"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not name %s:\n%s", want, notes)
		}
	}
	types := runtimeTypes(s.Runtime())
	if types[RuntimeCompaction] != 1 || types[RuntimeLegacyFields] != 1 {
		t.Fatalf("runtime %v", types)
	}
	for _, rec := range s.Runtime() {
		if rec.Type == RuntimeCompaction {
			var d struct {
				Summary      string
				MessageCount int
			}
			json.Unmarshal(rec.Data, &d)
			if !strings.Contains(d.Summary, "Mock summary") || d.MessageCount != 0 {
				t.Fatalf("compaction record %s", rec.Data)
			}
		}
	}
	// The result is an ordinary session.
	o := reopen(t, r, s)
	wantMessages(t, o.Messages(), msgs)
	if sums, _ := r.List("", ListOptions{}); len(sums) != 1 || sums[0].ID != s.ID() {
		t.Fatalf("list %v", sums)
	}
}

func TestMigrateLegacyNameAndBash(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "")
	src := "testdata/legacy/session-file-with-name-compaction-bash.jsonl"
	s, err := r.MigrateLegacyTo(src, ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header()
	if h.Title != "research-session" || h.TitleSource != TitleManual || h.MessageCount != 4 || h.UserMessageCount != 2 || *h.WorkspaceID != ws.ID {
		t.Fatalf("header %+v", h)
	}
	types := runtimeTypes(s.Runtime())
	if types[RuntimeLegacyEntry] != 1 || types[RuntimeCompaction] != 1 || types[RuntimeLegacyFields] != 2 {
		t.Fatalf("runtime %v", types)
	}
	if notes := strings.Join(h.Migration.Notes, "\n"); !strings.Contains(notes, "bashExecution") {
		t.Fatalf("notes do not name the bash execution:\n%s", notes)
	}
	for _, rec := range s.Runtime() {
		if rec.Type == RuntimeLegacyEntry && !strings.Contains(string(rec.Data), "from-rpc-bash") {
			t.Fatalf("bash entry not kept verbatim: %s", rec.Data)
		}
	}
	// Migrating the unchanged file again opens the earlier result.
	s.Close()
	again, err := r.MigrateLegacyTo(src, ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != s.ID() {
		t.Fatalf("second migration made %s", again.ID())
	}
	again.Close()
	// A changed source is a new migration with a new id.
	changed := filepath.Join(t.TempDir(), "changed.jsonl")
	b, _ := os.ReadFile(src)
	os.WriteFile(changed, append(b, `{"type":"session_info","id":"aaaaaaaa","parentId":"67359779","timestamp":"2026-11-29T17:07:32.000Z","name":"renamed"}`+"\n"...), 0o600)
	third, err := r.MigrateLegacyTo(changed, ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if third.ID() == s.ID() || third.Header().Title != "renamed" {
		t.Fatalf("changed source: id %s title %q", third.ID(), third.Header().Title)
	}
}

func TestMigrateLegacyBranchesAndOddLines(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	lines := []string{
		`{"type":"session","version":3,"id":"01a22846-aa78-736c-91ae-c8cff69b64e9","timestamp":"2026-11-29T17:07:29.529Z","cwd":"` + cwd + `","parentSession":"/old.jsonl"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-29T17:07:29.586Z","message":{"role":"user","content":"plain string","timestamp":1}}`,
		`{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-11-29T17:07:29.600Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x"}}],"stopReason":"toolUse","timestamp":2}}`,
		`{"type":"message","id":"t1","parentId":"b1","timestamp":"2026-11-29T17:07:29.700Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"data"}],"isError":false,"details":{"lines":1},"timestamp":3}}`,
		`{"type":"message","id":"x1","parentId":"t1","timestamp":"2026-11-29T17:07:30.000Z","message":{"role":"user","content":[{"type":"text","text":"abandoned branch"}],"timestamp":4}}`,
		`this line is not json`,
		`{"type":"label","id":"l1","parentId":"t1","timestamp":"2026-11-29T17:07:31.000Z","targetId":"a1","label":"start"}`,
		`{"type":"message","id":"y1","parentId":"l1","timestamp":"2026-11-29T17:07:32.000Z","message":{"role":"user","content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"timestamp":5}}`,
	}
	src := filepath.Join(t.TempDir(), "branchy.jsonl")
	os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	s, err := r.MigrateLegacy(src, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := s.Messages()
	if len(msgs) != 4 {
		t.Fatalf("%d messages: %+v", len(msgs), msgs)
	}
	if msgs[0].Text() != "plain string" || msgs[1].Content[0].Type != convo.BlockThinking || msgs[1].Content[0].Signature != "sig" ||
		string(msgs[1].Content[1].Arguments) != `{"path":"x"}` || msgs[2].ToolCallID != "c1" || msgs[3].Content[0].Type != convo.BlockImage {
		t.Fatalf("messages %+v", msgs)
	}
	types := runtimeTypes(s.Runtime())
	if types[RuntimeLegacyEntry] != 2 || types[RuntimeLegacyUnparsed] != 1 || types[RuntimeLegacyFields] != 1 {
		t.Fatalf("runtime %v", types)
	}
	notes := strings.Join(s.Header().Migration.Notes, "\n")
	for _, want := range []string{"off the current branch", "not JSON", "label", "details", "parentSession"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes miss %q:\n%s", want, notes)
		}
	}
}

func TestMigrateLegacyRejects(t *testing.T) {
	r, _ := newTestRoot(t)
	// The stored cwd must exist.
	src := "testdata/legacy/session-file-auto-compaction.jsonl"
	if _, err := os.Stat("/tmp/pi/work"); os.IsNotExist(err) {
		if _, err := r.MigrateLegacy(src, ""); !errors.Is(err, ErrCwdMissing) {
			t.Fatalf("missing cwd: %v", err)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"loop.jsonl":  `{"role":"user"}` + "\n",
		"v9.jsonl":    `{"type":"session","version":9,"id":"x","cwd":"/"}` + "\n",
		"empty.jsonl": "",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		if _, err := r.MigrateLegacyTo(p, "", t.TempDir()); !errors.Is(err, ErrUnsupportedFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(r.Dir()); len(entries) != 0 {
		t.Fatalf("rejected migrations wrote %v", entries)
	}
}
