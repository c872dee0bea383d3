package importer

import (
	"runtime"
	"strings"
	"testing"
)

// longText is n bytes of prose with the escapes real text has (quotes,
// backslashes, newlines), and its JSON form.
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

// Converting a file whose one line holds a long text copies that text
// once, into the message: before, every level of JSON the text sat in
// copied it again (json.RawMessage), and decoding it twice more, about
// six times the line in all (docs/performance.md, "Import").
func TestConvertCopiesALongLineOnce(t *testing.T) {
	text, quoted := longText(4 << 20)
	for name, src := range map[string]string{
		"claude prompt":      `{"parentUuid":null,"isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000003","version":"2.1.332","type":"user","message":{"role":"user","content":` + quoted + `},"uuid":"u1","timestamp":"2026-12-01T11:00:00.000Z"}` + "\n",
		"claude tool result": `{"parentUuid":null,"isSidechain":false,"cwd":"/tmp","sessionId":"3f1c2a8e-0000-4000-8000-000000000003","version":"2.1.332","type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":` + quoted + `,"is_error":false}]},"uuid":"u1","timestamp":"2026-12-01T11:00:00.000Z"}` + "\n",
		"codex output": `{"timestamp":"2026-12-01T11:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000003","cwd":"/tmp","cli_version":"0.171.0","model_provider":"openai"}}` + "\n" +
			`{"timestamp":"2026-12-01T11:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":` + quoted + `}}` + "\n",
		"codex prompt": `{"timestamp":"2026-12-01T11:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000003","cwd":"/tmp","cli_version":"0.171.0","model_provider":"openai"}}` + "\n" +
			`{"timestamp":"2026-12-01T11:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":` + quoted + `}]}}` + "\n",
	} {
		data := []byte(src)
		var got string
		n := allocated(func() {
			imp, err := Convert(data, "/src/x.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			got = imp.Messages[len(imp.Messages)-1].Content[0].Text
		})
		if got != text {
			t.Fatalf("%s: text of %d bytes, want %d", name, len(got), len(text))
		}
		t.Logf("%s: %.2f× the text", name, float64(n)/float64(len(text)))
		if limit := uint64(len(text)) * 3 / 2; n > limit {
			t.Errorf("%s: converting a %d-byte line allocated %d bytes (%.1f×), want at most %d: one copy of the text", name, len(data), n, float64(n)/float64(len(text)), limit)
		}
	}
}

// prefix reads the start of a long string without decoding all of it,
// and the whole of a short one.
func TestPrefixIsTheStartOfTheString(t *testing.T) {
	text, quoted := longText(1 << 20)
	n := allocated(func() {
		if p := prefix(raw(quoted), 100); !strings.HasPrefix(text, p) || len(p) < 50 || len(p) > 120 {
			t.Errorf("prefix = %q", p)
		}
	})
	if n > 4096 {
		t.Errorf("prefix of a 1 MB string allocated %d bytes", n)
	}
	for _, s := range []string{`""`, `"short"`, `"\u00e9\ud83d\ude00 \n"`, `"ab\u00e9"`} {
		if p, whole := prefix(raw(s), 3), str(raw(s)); !strings.HasPrefix(whole, strings.TrimSuffix(p, "\ufffd")) {
			t.Errorf("prefix(%s) = %q, not a start of %q", s, p, whole)
		}
	}
}
