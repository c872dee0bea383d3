package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	b, err := Marshal(map[string]any{"t": "<a href='x'>&</a>", "raw": json.RawMessage(`"<b>"`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"raw":"<b>","t":"<a href='x'>&</a>"}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	b, err = MarshalIndent([]string{"<&>"}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\n \"<&>\"\n]"; string(b) != want {
		t.Fatalf("MarshalIndent = %q, want %q", b, want)
	}
}

func TestUnescapeHTMLRestoresCharactersOnly(t *testing.T) {
	for _, s := range []string{
		"", "plain", "<", "a<b>c&d", `\u003c typed by hand`, `back\slash <`, "\u2028 <\u2029", "\x7f&\"\\", `\\u003c`,
	} {
		esc, _ := json.Marshal(map[string]string{"s": s, "<k>": s})
		got := UnescapeHTML(esc)
		if bytes.Contains(got, []byte(`\u003c`)) && !bytes.Contains([]byte(s), []byte(`u003c`)) {
			t.Errorf("%q: still escaped: %s", s, got)
		}
		want, _ := Marshal(map[string]string{"s": s, "<k>": s})
		if !bytes.Equal(got, want) {
			t.Errorf("%q: UnescapeHTML = %s, want %s", s, got, want)
		}
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["s"] != s || back["<k>"] != s {
			t.Errorf("%q: does not decode to the same value: %s (%v)", s, got, err)
		}
	}
}

func TestUnescapeHTMLLeavesInputAlone(t *testing.T) {
	in := []byte(`{"a":"\u003c\u003E\u0026"}`)
	orig := string(in)
	if got := string(UnescapeHTML(in)); got != `{"a":"<>&"}` {
		t.Fatalf("UnescapeHTML = %s", got)
	}
	if string(in) != orig {
		t.Fatalf("input modified: %s", in)
	}
	plain := []byte(`{"a":"\n\"x\u00e9"}`)
	if got := UnescapeHTML(plain); &got[0] != &plain[0] {
		t.Fatal("nothing to rewrite, but a copy was made")
	}
}

func FuzzUnescapeHTML(f *testing.F) {
	f.Add("<a>&amp;\\u003c")
	f.Fuzz(func(t *testing.T, s string) {
		esc, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		var back string
		if err := json.Unmarshal(UnescapeHTML(esc), &back); err != nil {
			t.Fatal(err)
		}
		var orig string
		_ = json.Unmarshal(esc, &orig)
		if back != orig {
			t.Fatalf("%q decodes as %q, want %q", s, back, orig)
		}
	})
}
