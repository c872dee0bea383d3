package trace

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/jsonenc"
)

// A secret may begin with hex digits that a \uXXXX escape of the line
// ends in (a control character, an invalid byte written as \ufffd, U+2028
// before the text): the match then starts inside the escape, and
// replacing from there would leave "\u00[REDACTED]", which no reader
// parses.
func TestScrubbingASecretThatStartsInsideAUnicodeEscapeKeepsTheLineJSON(t *testing.T) {
	for _, tc := range []struct{ text, secret string }{
		{"\x1b" + "-secret-key", "1b-secret-key"},
		{"\x1b" + "-secret-key", "01b-secret-key"},
		{"\xff" + "00-secret", "fd00-secret"},
		{"\xff" + "00-secret", "ffd00-secret"},
		{"\u2028" + "9abcdef", "289abcdef"},
	} {
		line, err := jsonenc.Marshal(map[string]string{"s": tc.text})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(line, []byte(tc.secret)) {
			t.Fatalf("%s does not hold %q: the case tests nothing", line, tc.secret)
		}
		got, changed := scrubLine(bytes.Clone(line), []string{tc.secret})
		if !changed || bytes.Contains(got, []byte(tc.secret)) {
			t.Fatalf("%s scrubbed of %q: %s", line, tc.secret, got)
		}
		if !json.Valid(got) {
			t.Fatalf("%s scrubbed of %q to %s, which is not JSON", line, tc.secret, got)
		}
	}
}

// Property: whatever a line's strings hold (escapes of every kind, JSON
// inside a string, invalid bytes), scrubbing leaves valid JSON that holds
// no form of any secret, as a reader decodes it or as it is spelled.
func TestScrubbingAnyLineLeavesJSONWithoutAnySecretForm(t *testing.T) {
	secrets := []string{"nvapi-4f9Zq81", "u12ab-secret", "rkey-00000", `tail-key\`, `"quoted-key`, "1b-hexkey", "fd-hexkey9", "0a\\n-key", `k"e\y-<&>`}
	pieces := []string{"\n", "\t", "\r", `\`, `\\`, `"`, "\x1b", "\x00", "\xff", "\u2028", "\u12ab", "\u0007", "é", " text ", "u", "n", "fd", "1b", "-hexkey", "vapi-4f9Zq81", "key-00000", "u12ab", "\\u", "\\n"}
	pieces = append(pieces, secrets...)
	rng := rand.New(rand.NewPCG(7, 11))
	for n := range 30000 {
		var s []byte
		for range 1 + rng.IntN(10) {
			s = append(s, pieces[rng.IntN(len(pieces))]...)
		}
		var line []byte
		if n%2 == 0 {
			line, _ = jsonenc.Marshal(map[string]string{"s": string(s)})
		} else {
			// A string that holds JSON: a secret inside is escaped twice.
			inner, _ := jsonenc.Marshal(map[string]string{"d": string(s)})
			line, _ = jsonenc.Marshal(map[string]string{"s": string(inner)})
		}
		got, _ := scrubLine(bytes.Clone(line), secrets)
		if !json.Valid(got) {
			t.Fatalf("line %d %s scrubbed to %s, which is not JSON", n, line, got)
		}
		for _, sec := range secrets {
			raw := []byte(sec)
			for range 3 {
				if bytes.Contains(got, raw) {
					t.Fatalf("line %s scrubbed to %s still holds %q", line, got, raw)
				}
				esc := appendJSONString(nil, raw)
				raw = esc[1 : len(esc)-1]
			}
		}
		var back map[string]string
		_ = json.Unmarshal(got, &back)
		if n%2 == 1 {
			var inner map[string]string
			if json.Unmarshal([]byte(back["s"]), &inner) == nil {
				back["s"] = inner["d"]
			}
		}
		for _, sec := range secrets {
			if strings.Contains(back["s"], sec) {
				t.Fatalf("line %s scrubbed to %s still decodes to a string holding %q", line, got, sec)
			}
		}
	}
}
