package store

import (
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

// A long message is encoded straight into the batch's one buffer, sized
// once: encoding/json grew a buffer of its own step by step and copied it
// out, more than six times the line in allocations, several of them alive
// at once (docs/performance.md, "Import").
func TestEncodingALongMessageAllocatesItsLineOnce(t *testing.T) {
	text, quoted := longText(4 << 20)
	msgs := []convo.Message{{Role: convo.RoleUser, Timestamp: 1, Content: []convo.Block{{Type: convo.BlockText, Text: text}}}, {Role: convo.RoleAssistant, Timestamp: 2, Content: []convo.Block{{Type: convo.BlockText, Text: "ok"}}, StopReason: convo.StopEnd}}
	var b encodedBatch
	n := allocated(func() {
		var err error
		if b, err = encodeBatch(msgs, 0, nil); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(string(b.lines), quoted) {
		t.Fatal("the text is not in the encoded lines")
	}
	t.Logf("%.2f× the lines", float64(n)/float64(len(b.lines)))
	if limit := uint64(len(b.lines)) * 3 / 2; n > limit {
		t.Errorf("encoding %d bytes of lines allocated %d bytes (%.1f×), want at most %d", len(b.lines), n, float64(n)/float64(len(b.lines)), limit)
	}
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
