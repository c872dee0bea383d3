package store

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// Migrating a changed pi file (its pi id taken by the earlier version)
// again and again opens one session: its id derives from the checksum.
func TestRemigrateChangedFileOpensEarlierResult(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	src := "testdata/legacy/session-file-with-name-compaction-bash.jsonl"
	s1, err := r.MigrateLegacyTo(src, "", cwd)
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	changed := filepath.Join(t.TempDir(), "changed.jsonl")
	b, _ := os.ReadFile(src)
	b = append(b, `{"type":"session_info","id":"aaaaaaaa","parentId":"67359779","timestamp":"2026-11-29T17:07:32.000Z","name":"renamed"}`+"\n"...)
	os.WriteFile(changed, b, 0o600)
	sum := sha256.Sum256(b)
	want := uuid.NewSHA1(uuid.MustParse("da81c134-5a93-43e5-a529-518009733310"), []byte(hex.EncodeToString(sum[:]))).String()
	for i := range 3 {
		s, err := r.MigrateLegacyTo(changed, "", cwd)
		if err != nil {
			t.Fatal(err)
		}
		if s.ID() != want || s.Header().Title != "renamed" {
			t.Fatalf("migration %d: id %s title %q, want id %s", i, s.ID(), s.Header().Title, want)
		}
		s.Close()
	}
	if sums, _ := r.List("", ListOptions{}); len(sums) != 2 {
		t.Fatalf("%d sessions listed, want 2", len(sums))
	}
}

// A pi file whose id is not a UUID also finds its earlier result.
func TestRemigrateFileWithoutUUID(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	src := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(src, []byte(`{"type":"session","version":3,"id":"not-a-uuid","timestamp":"2026-11-29T17:13:03.999Z","cwd":"`+cwd+`"}`+"\n"+
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-29T17:13:04.021Z","message":{"role":"user","content":"hi","timestamp":1}}`+"\n"), 0o600)
	var ids []string
	for range 2 {
		s, err := r.MigrateLegacy(src, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
		s.Close()
	}
	if ids[0] != ids[1] {
		t.Fatalf("two sessions %v", ids)
	}
}

// Two migrations of one file at once (two processes): each builds its own
// temporary directory, the second to publish fails cleanly and opens the
// first's result, and the session stays openable after further commits.
func TestConcurrentMigrationsShareOneSession(t *testing.T) {
	rA, ffsA := newTestRoot(t)
	cwd := t.TempDir()
	src := "testdata/legacy/session-file-auto-compaction.jsonl"
	rB, _ := OpenRoot(rA.Dir())
	ffsB := &storetest.FaultFS{FS: fsys.OS{}}
	rB.fs = ffsB
	// Both creators get as far as writing the header in their temporary
	// directories before either publishes.
	bAtHeader := make(chan struct{})
	releaseB := make(chan struct{})
	startB := make(chan struct{})
	var onceA, onceB sync.Once
	atHeader := func(op, p string) bool {
		return op == "open" && strings.Contains(p, ".tmp-") && strings.HasSuffix(p, headerFile)
	}
	ffsA.Arm(func(op, p string) *storetest.Fault {
		if atHeader(op, p) {
			onceA.Do(func() { close(startB); <-bAtHeader })
		}
		return nil
	})
	ffsB.Arm(func(op, p string) *storetest.Fault {
		if atHeader(op, p) {
			onceB.Do(func() { close(bAtHeader); <-releaseB })
		}
		return nil
	})
	var sB *Session
	var errB error
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-startB
		sB, errB = rB.MigrateLegacyTo(src, "", cwd)
	}()
	sA, errA := rA.MigrateLegacyTo(src, "", cwd)
	close(releaseB)
	<-done
	if errA != nil || errB != nil {
		t.Fatalf("A: %v, B: %v", errA, errB)
	}
	defer sB.Close()
	if sA.ID() != sB.ID() || !sB.ReadOnly() {
		t.Fatalf("A made %s, B opened %s (read-only %v)", sA.ID(), sB.ID(), sB.ReadOnly())
	}
	if got := scopeEntries(t, sA); len(got) != 1 {
		t.Fatalf("scope holds %v", got)
	}
	ffsA.Arm(nil)
	mustCommit(t, sA, append(sA.Messages(), prompt(9)...), nil, nil)
	sA.Close()
	o, err := rB.Open("", sA.ID())
	if err != nil {
		t.Fatalf("session unopenable after an acknowledged commit: %v", err)
	}
	o.Close()
}

// Nothing of a pi file is dropped without a record: superseded settings,
// message entry members, non-string block members.
func TestLegacyKeepsWhatHasNoPlace(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	src := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(src, []byte(strings.Join([]string{
		`{"type":"session","version":3,"id":"01a2284b-c4fe-7614-97b5-e9c387c39b51","timestamp":"2026-11-29T17:13:03.999Z","cwd":"` + cwd + `"}`,
		`{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-11-29T17:13:04.010Z","provider":"anthropic","modelId":"OLDMODEL","extraMC":"XMC"}`,
		`{"type":"thinking_level_change","id":"t1","parentId":"m1","timestamp":"2026-11-29T17:13:04.011Z","thinkingLevel":"OLDLEVEL"}`,
		`{"type":"session_info","id":"n1","parentId":"t1","timestamp":"2026-11-29T17:13:04.012Z","name":"OLDNAME"}`,
		`{"type":"message","id":"u1","parentId":"n1","timestamp":"2026-11-29T17:13:04.021Z","ENTRYFIELD":"KEEPME","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}`,
		`{"type":"model_change","id":"m2","parentId":"u1","timestamp":"2026-11-29T17:13:05.010Z","provider":"mock","modelId":"mock-model","LASTEXTRA":1}`,
		`{"type":"thinking_level_change","id":"t2","parentId":"m2","timestamp":"2026-11-29T17:13:05.011Z","thinkingLevel":"high"}`,
		`{"type":"session_info","id":"n2","parentId":"t2","timestamp":"2026-11-29T17:13:05.012Z","name":"title"}`,
		`{"type":"message","id":"a1","parentId":"n2","timestamp":"2026-11-29T17:13:06.021Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":{"SIGOBJ":1}},{"type":"text","text":7}],"timestamp":2}}`,
	}, "\n")+"\n"), 0o600)
	s, err := r.MigrateLegacyTo(src, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Header()
	if h.Model == nil || h.Model.ID != "mock-model" || h.Effort != "high" || h.Title != "title" {
		t.Fatalf("header settings %+v %q %q", h.Model, h.Effort, h.Title)
	}
	var all strings.Builder
	for _, rec := range s.Runtime() {
		all.Write(rec.Data)
	}
	notes := strings.Join(h.Migration.Notes, "\n")
	for _, want := range []string{"KEEPME", "OLDMODEL", "XMC", "OLDLEVEL", "OLDNAME", "LASTEXTRA", "SIGOBJ", `"content[1].text":7`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("%s dropped without a record", want)
		}
	}
	for _, want := range []string{"superseded model_change", "superseded thinking_level_change", "superseded session_info", "ENTRYFIELD", "content[0].thinkingSignature"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not name %s:\n%s", want, notes)
		}
	}
	if sig := s.Messages()[1].Content[0].Signature; sig != "" {
		t.Errorf("signature %q", sig)
	}
}
