package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// recoveryOf is the recovery file Loop writes for a session whose committed
// history is committed and whose unsaved result is all, with run's usage.
func recoveryOf(t testing.TB, h Header, all []convo.Message, timings []PromptTiming, run convo.UsageSum) []byte {
	t.Helper()
	usage := h.Usage
	usage.Add(convo.SessionUsage{UsageSum: run})
	b, err := EncodeRecovery(&Recovery{SessionID: h.ID, WorkspaceID: h.WorkspaceID, Cwd: h.Cwd, Error: "no space left on device", Header: h, Timings: timings, Messages: all, Usage: usage})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestARecoveryFileReadsBackAsLoopWroteIt(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCommit(t, s, prompt(0), nil, nil)
	run := convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2, Cost: 0.5}
	all := append(prompt(0), prompt(1)...)
	timings := []PromptTiming{{ID: "run-2", UserMessageIndex: 4, MessageStartIndex: Some(4), MessageEndIndex: Some(8), StartedAt: 1, FinishedAt: Some(int64(2)), Usage: run}}
	data := recoveryOf(t, s.Header(), all, timings, run)
	if !IsRecovery(data) {
		t.Fatal("IsRecovery does not know a recovery file")
	}
	rec, err := ParseRecovery(data, "/x/loop-recovery.json")
	if err != nil {
		t.Fatal(err)
	}
	wantMessages(t, rec.Messages, all)
	if rec.SessionID != s.ID() || rec.Cwd != s.Header().Cwd || rec.WorkspaceID != nil || len(rec.Timings) != 1 || rec.Timings[0] != timings[0] {
		t.Fatalf("identity or timings differ: %+v", rec)
	}
	if got := rec.Unsaved(); got != (convo.SessionUsage{UsageSum: run}) {
		t.Fatalf("unsaved usage %+v, want %+v", got, run)
	}
	if fit := rec.Fit(s.Messages(), s.Timings()); fit != RecoveryExtends {
		t.Fatalf("fit %v, want RecoveryExtends", fit)
	}
	if fit := rec.Fit(all, timings); fit != RecoveryApplied {
		t.Fatalf("after the commit: fit %v, want RecoveryApplied", fit)
	}
	other := prompt(0)
	other[3].Content[0].Text = "another answer"
	if fit := rec.Fit(append(other, prompt(2)...), nil); fit != RecoveryDiverged {
		t.Fatalf("a changed answer: fit %v, want RecoveryDiverged", fit)
	}
}

func TestIsRecoveryKnowsNoOtherFormat(t *testing.T) {
	for _, data := range []string{``, `{}`, `[]`, `{"format":"loop-export"}`, `{"cwd":"/x","header":{}}`, `{"cwd":1,"error":"","header":{}}`, "{\"type\":\"session\"}\n"} {
		if IsRecovery([]byte(data)) {
			t.Errorf("IsRecovery(%q) = true", data)
		}
	}
}

// A recovery file is input like any other: one that does not hold
// together is refused, naming the file, and never applied.
func TestARecoveryFileThatDoesNotHoldTogetherIsRefused(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2}
	timings := []PromptTiming{{ID: "run-1", MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2)), Usage: run}}
	good := string(recoveryOf(t, s.Header(), prompt(0), timings, run))
	if _, err := ParseRecovery([]byte(good), "/tmp/f.json"); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	for name, data := range map[string]string{
		"not json":         good[:len(good)/2],
		"another id":       strings.Replace(good, `"sessionId": "`+id, `"sessionId": "0195f0e2-7c3a-7000-8000-000000000009`, 1),
		"bad id":           strings.ReplaceAll(good, id, "../../x"),
		"relative cwd":     strings.Replace(good, `"cwd": "/`, `"cwd": "`, 1),
		"unknown role":     strings.Replace(good, `"role": "user"`, `"role": "system"`, 1),
		"another format":   strings.Replace(good, `"format": "loop-session"`, `"format": "pi"`, 1),
		"another scope":    strings.Replace(good, `"workspaceId": null`, `"workspaceId": "0195f0e2-7c3a-7000-8000-0000000000aa"`, 1),
		"negative usage":   strings.Replace(good, `"calls": 2`, `"calls": -2`, 1),
		"negative timing":  strings.Replace(good, `"messageStartIndex": 0`, `"messageStartIndex": -1`, 1),
		"timing beyond":    strings.Replace(good, `"messageEndIndex": 4`, `"messageEndIndex": 5`, 1),
		"committed beyond": strings.Replace(good, `"messageCount": 0`, `"messageCount": 9`, 1),
	} {
		if _, err := ParseRecovery([]byte(data), "/tmp/f.json"); err == nil || !strings.Contains(err.Error(), "/tmp/f.json") {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

func TestRecoveryFilesFindsOnlyTheSessionsOwnOldestFirst(t *testing.T) {
	r, _ := newTestRoot(t)
	id := "0195f0e2-7c3a-7000-8000-000000000001"
	other := "0195f0e2-7c3a-7000-8000-000000000002"
	l := r.Layout()
	if got, err := r.RecoveryFiles("", id); err != nil || len(got) != 0 {
		t.Fatalf("no scope yet: %v, %v", got, err)
	}
	for _, p := range []string{l.Recovery("", id, 20), l.Recovery("", id, 3), l.Recovery("", other, 1), filepath.Join(l.Scope(""), "loop-recovery-"+id+"-x.json"), filepath.Join(l.Scope(""), "loop-recovery-"+id+"-5.json.tmp-1")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.RecoveryFiles("", id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{l.Recovery("", id, 3), l.Recovery("", id, 20)}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A draft's unsaved first run never reached the disk: its recovery file
// becomes the session, under the draft's id, with the whole usage ledger
// and the timings; importing the same file again finds it.
func TestARecoveryOfADraftImportsUnderTheDraftsID(t *testing.T) {
	r, _ := newTestRoot(t)
	d := r.Draft("", t.TempDir())
	run := convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2}
	timings := []PromptTiming{{ID: "run-1", MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2)), Usage: run}}
	data := recoveryOf(t, d.Header(), prompt(0), timings, run)
	rec, err := ParseRecovery(data, "/tmp/f.json")
	if err != nil {
		t.Fatal(err)
	}
	imp := rec.Imported("/tmp/f.json", true)
	s, existed, err := r.Import(&imp, Checksum(data), "", "")
	if err != nil || existed {
		t.Fatalf("import: %v, existed %v", err, existed)
	}
	h := s.Header()
	if s.ID() != d.ID() || h.Cwd != d.Header().Cwd || !h.Unread || h.Usage.UsageSum != run || h.Migration.From != RecoveryFormat {
		t.Fatalf("imported header %+v", h)
	}
	wantMessages(t, s.Messages(), prompt(0))
	if ts := s.Timings(); len(ts) != 1 || ts[0] != timings[0] {
		t.Fatalf("timings %+v", ts)
	}
	s.Close()
	again, existed, err := r.Import(&imp, Checksum(data), "", "")
	if err != nil || !existed || again.ID() != d.ID() {
		t.Fatalf("import again: %v, existed %v", err, existed)
	}
	again.Close()
}

// FuzzParseRecovery: a recovery file is input like any other: parsing
// never panics, fails only with ErrMalformed or ErrUnsupportedFormat, and
// what it accepts can be compared with any history and imported.
func FuzzParseRecovery(f *testing.F) {
	h := Header{Format: FormatName, Version: FormatVersion, ID: "0195f0e2-7c3a-7000-8000-000000000001", Cwd: "/tmp", CreatedAt: 1, UpdatedAt: 2}
	run := convo.UsageSum{Input: 250, Output: 50, TotalTokens: 300, Calls: 2}
	timings := []PromptTiming{{ID: "run-1", MessageStartIndex: Some(0), MessageEndIndex: Some(4), StartedAt: 1, FinishedAt: Some(int64(2)), Usage: run}}
	f.Add(recoveryOf(f, h, prompt(0), timings, run))
	f.Add([]byte(`{"cwd":"/x","error":"","header":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		IsRecovery(data)
		rec, err := ParseRecovery(data, "/tmp/f.json")
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("error of neither kind: %v", err)
			}
			return
		}
		rec.Fit(nil, nil)
		rec.Fit(prompt(0), timings)
		if fit := rec.Fit(rec.Messages, rec.Timings); fit != RecoveryApplied {
			t.Fatalf("a file does not fit its own history: %v", fit)
		}
		rec.Unsaved()
		rec.Imported("/tmp/f.json", false)
	})
}
