package store

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// longText is n bytes of prose with the escapes real text has, and its
// JSON form.
func longText(n int) (text, quoted string) {
	unit := "lorem ipsum \"dolor\" sit \\ amet,\n"
	text = strings.Repeat(unit, n/len(unit))
	quoted = `"` + strings.NewReplacer(`"`, `\"`, `\`, `\\`, "\n", `\n`).Replace(text) + `"`
	return text, quoted
}

// allocated is the bytes f allocates (no other goroutine of the test
// allocates anything of this size meanwhile).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A long message's line is written to messages.jsonl a piece at a time:
// the commit counts and sums it first, then writes it, and never holds it
// whole. Encoding it into the batch's one buffer cost a copy of the text
// the size of its line, alive beside the text itself and whatever else a
// prompt of 50 MB had made (docs/performance.md, "One large prompt").
func TestCommittingALongMessageWritesItsLineInPieces(t *testing.T) {
	text, quoted := longText(4 << 20)
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCommit(t, s, history(2), nil, nil)
	msgs := append(history(2), convo.Message{Role: convo.RoleUser, Timestamp: 3, Content: []convo.Block{{Type: convo.BlockText, Text: text}}},
		convo.Message{Role: convo.RoleAssistant, Timestamp: 4, Content: []convo.Block{{Type: convo.BlockText, Text: "ok"}}, StopReason: convo.StopEnd})
	n := allocated(func() { mustCommit(t, s, msgs, nil, nil) })
	t.Logf("%.3f× the text", float64(n)/float64(len(text)))
	// What it allocates does not grow with the text: pieces of 32 KiB,
	// and the search index's fold of the text's first 256 KiB.
	if limit := uint64(len(text)) / 2; n > limit {
		t.Errorf("committing a message of %d bytes allocated %d bytes, want at most %d: its line was built whole", len(text), n, limit)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), messagesFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `{"type":"text","text":`+quoted+`}`) {
		t.Fatal("the text is not in messages.jsonl as encoding/json writes it")
	}
	o := reopen(t, r, s)
	defer o.Close()
	wantMessages(t, o.Messages(), msgs)
}

// A pi file whose one line holds a long text is parsed with one copy of
// the text, into the message: before, the line was cloned, and each level
// of JSON around the text copied it again.
func TestParsingALongPiLineCopiesItOnce(t *testing.T) {
	text, quoted := longText(4 << 20)
	data := []byte(`{"type":"session","version":3,"id":"3f1c2a8e-0000-4000-8000-000000000004","timestamp":"2026-12-01T11:00:00.000Z","cwd":"/tmp"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T11:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":` + quoted + `}],"timestamp":1795000000000}}` + "\n")
	var imp Imported
	n := allocated(func() {
		var err error
		if imp, err = ParsePi(data, "/src/x.jsonl"); err != nil {
			t.Fatal(err)
		}
	})
	if got := imp.Messages[0].Content[0].Text; got != text {
		t.Fatalf("text of %d bytes, want %d", len(got), len(text))
	}
	t.Logf("%.2f× the text", float64(n)/float64(len(text)))
	if limit := uint64(len(text)) * 3 / 2; n > limit {
		t.Errorf("parsing a %d-byte line allocated %d bytes (%.1f×), want at most %d: one copy of the text", len(data), n, float64(n)/float64(len(text)), limit)
	}
}
