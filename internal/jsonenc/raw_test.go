package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// DecodeString reads every string literal as json.Unmarshal does, and
// refuses what json.Unmarshal refuses to read as a string.
func FuzzDecodeStringMatchesUnmarshal(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u2028"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\udc00\ud83d\ude00"`, "\"\xff\xfe\"", "\"é😀\ufffd\"", `"\'"`, `"\x"`, `"\u12"`, `"a`, `"` + "\x01" + `"`, `12`, `"tail\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		// A Raw holds a value without the space around it.
		s = bytes.Trim(s, " \t\r\n")
		got, ok := DecodeString(s)
		var want string
		if json.Unmarshal(s, &want) != nil {
			// What json.Unmarshal refuses is never a valid literal; the
			// scanner refuses some that unquoting alone would take (\').
			if ok && json.Valid(s) {
				t.Fatalf("DecodeString(%q) = %q, but json.Unmarshal refuses it", s, got)
			}
			return
		}
		if !ok || got != want {
			t.Fatalf("DecodeString(%q) = %q, %v; want %q", s, got, ok, want)
		}
	})
}

// A map of Raw keeps the members as parts of the decoded bytes.
func TestRawKeepsThePartOfTheInput(t *testing.T) {
	in := []byte(`{"a": {"b": "long text"}, "n": 1}`)
	var m map[string]Raw
	if err := json.Unmarshal(in, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["a"]) != `{"b": "long text"}` || &m["a"][0] != &in[6] {
		t.Errorf("member a = %q, not the input's own bytes", m["a"])
	}
	out, err := Marshal(m)
	if err != nil || string(out) != `{"a":{"b":"long text"},"n":1}` {
		t.Errorf("Marshal = %s, %v", out, err)
	}
}
