package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/jsonenc"
)

// lines is how many random lines a property test tries: n, a tenth under
// the race detector.
func lines(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}

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
		got, changed := New(tc.secret).Scrub(line)
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
// no secret, neither as the line spells it nor as a reader decodes it.
func TestScrubbingAnyLineLeavesJSONWithoutAnySecret(t *testing.T) {
	secrets := []string{"nvapi-4f9Zq81", "u12ab-secret", "rkey-00000", `tail-key\`, `"quoted-key`, "1b-hexkey", "fd-hexkey9", "0a\\n-key", `k"e\y-<&>`}
	set := New(secrets...)
	pieces := []string{"\n", "\t", "\r", `\`, `\\`, `"`, "\x1b", "\x00", "\xff", "\u2028", "\u12ab", "\u0007", "é", " text ", "u", "n", "fd", "1b", "-hexkey", "vapi-4f9Zq81", "key-00000", "u12ab", "\\u", "\\n"}
	pieces = append(pieces, secrets...)
	rng := rand.New(rand.NewPCG(7, 11))
	for n := range lines(30000) {
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
		got, _ := set.Scrub(line)
		if !json.Valid(got) {
			t.Fatalf("line %d %s scrubbed to %s, which is not JSON", n, line, got)
		}
		for _, sec := range secrets {
			for _, form := range jsonForms(sec) {
				if bytes.Contains(got, form) {
					t.Fatalf("line %s scrubbed to %s still holds %q", line, got, form)
				}
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

// Property: a key, ASCII or not, is scrubbed in every spelling: each
// character as itself or as a \u escape with hex digits of either case (a
// surrogate pair above U+FFFF), inside a string or inside a string that
// holds JSON, or percent-encoded with either case, in a line that is
// JSON or in plain text.
func TestScrubbingFindsAKeyInEverySpelling(t *testing.T) {
	keys := []string{
		"gw-ключ-секрет-42",
		"sk-clé-😀-live-998877",
		"𝔰𝔢𝔠𝔯𝔢𝔱",
		`tok/ÆØÅ+ß="q"\é`,
		"ab-été-zz-Ω-hello-world-1",
		"sk-proj-plainAsciiKey99",
		"a b+c/d=e%f",
	}
	set := New(keys...)
	rng := rand.New(rand.NewPCG(3, 5))
	for range lines(20000) {
		key := keys[rng.IntN(len(keys))]
		line, inJSON := spellAny(rng, key)
		got, changed := set.Scrub(line)
		if !changed || !set.MayHold(line) {
			t.Fatalf("%q (%q) not scrubbed: %q", line, key, got)
		}
		if inJSON && !json.Valid(got) {
			t.Fatalf("%s scrubbed to %s, which is not JSON", line, got)
		}
		for _, text := range decodings(got) {
			if strings.Contains(text, key) {
				t.Fatalf("%q scrubbed to %q still holds %q as %q", line, got, key, text)
			}
		}
		if text := set.Text(string(line)); text != string(got) {
			t.Fatalf("Text(%q) = %q, Scrub gave %q", line, text, got)
		}
	}
}

// spellAny is a line that spells key one of the ways a line may, between
// other text; inJSON says whether the line is JSON.
func spellAny(rng *rand.Rand, key string) (line []byte, inJSON bool) {
	around := func(s string, fillers ...string) string {
		return fillers[rng.IntN(len(fillers))] + s + fillers[rng.IntN(len(fillers))]
	}
	text := []string{"", " ", "x", "ab", "é", "%", "%2", `\`, `\n`}
	inString := []string{"", " ", "x", "é", `\n`, `\\`, `\"`, `\u00e9`, "%2"}
	noPercent := []string{"", " ", "x", "é", `\n`, `\\`, `\"`, `\u00e9`}
	switch rng.IntN(5) {
	case 0:
		return []byte(around(key, text...)), false
	case 1:
		return []byte(around(percent(rng, key), " ", "x", "é")), false
	case 2:
		return []byte(`{"a":"` + around(spellJSON(rng, key), inString...) + `","n":1}`), true
	case 3:
		// Inside a string that holds JSON: the spelling escaped again.
		inner := `{"k":"` + around(spellJSON(rng, key), inString...) + `"}`
		return []byte(`{"a":"` + spellJSON(rng, inner) + `"}`), true
	default:
		// A URL with the key in its query, in a string.
		return []byte(`{"a":"` + around(spellJSON(rng, "https://h/v1?key="+percent(rng, key)), noPercent...) + `"}`), true
	}
}

// spellJSON writes s as the inside of a JSON string: each character that
// may stand as it is, as itself or as a \u escape at random; the others
// by a short escape or a \u escape.
func spellJSON(rng *rand.Rand, s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '/' && rng.IntN(2) == 0:
			if rng.IntN(2) == 0 {
				b.WriteByte('\\')
				b.WriteRune(r)
				continue
			}
			b.WriteString(uEscape(rng, r))
		case r < 0x20:
			b.WriteString(uEscape(rng, r))
		case r < utf8.RuneSelf && plainByte(byte(r)):
			b.WriteRune(r) // no encoder escapes these
		case rng.IntN(3) == 0:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b.WriteString(uEscape(rng, r1) + uEscape(rng, r2))
		default:
			b.WriteString(uEscape(rng, r))
		}
	}
	return b.String()
}

// uEscape is \uXXXX for u, each hex digit upper or lower case at random.
func uEscape(rng *rand.Rand, u rune) string {
	return `\u` + randomCase(rng, fmt.Sprintf("%04x", u))
}

// percent percent-encodes s as a query or a path does, hex digits of
// random case.
func percent(rng *rand.Rand, s string) string {
	e := url.QueryEscape(s)
	if rng.IntN(2) == 0 {
		e = url.PathEscape(s)
	}
	b := []byte(e)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			copy(b[i+1:i+3], randomCase(rng, string(b[i+1:i+3])))
		}
	}
	return string(b)
}

// randomCase is the hex digits h, each in either case at random.
func randomCase(rng *rand.Rand, h string) string {
	b := []byte(strings.ToLower(h))
	for i, c := range b {
		if c >= 'a' && c <= 'f' && rng.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// decodings lists b as it is, its JSON strings decoded once and twice,
// and each of those percent-decoded.
func decodings(b []byte) []string {
	out := []string{string(b)}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
			var inner any
			if json.Unmarshal([]byte(v), &inner) == nil {
				walk(inner)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		walk(v)
	}
	for _, s := range out[:len(out):len(out)] {
		if u, err := url.QueryUnescape(s); err == nil {
			out = append(out, u)
		}
		if u, err := url.PathUnescape(s); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// The quick test (MayHold) never passes over a line Scrub would change,
// wherever a secret sits in it, however often its anchor byte appears
// around it.
func TestMayHoldPassesEveryLineScrubChanges(t *testing.T) {
	secrets := []string{
		"sk-proj-Xq7vN2bK9mTzXq7vN2bK9mTz",
		`k"e\y/wi"th\quotes`,
		"eeeeeeeeeee", // no rare byte at all
		"XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
		"ключ-é-Ω-😀",
		"short",
	}
	set := New(secrets...)
	fillers := []string{"history ", "XXXXXXX", "eeee", `\"`, "{\"a\":1}", "é—", `\u00e9`, "%41"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range lines(5000) {
		var line []byte
		for range rng.IntN(40) {
			line = append(line, fillers[rng.IntN(len(fillers))]...)
		}
		if n%2 == 0 {
			for _, s := range secrets {
				if rng.IntN(4) == 0 {
					at := rng.IntN(len(line) + 1)
					form, _ := spellAny(rng, s)
					line = append(line[:at:at], append(form, line[at:]...)...)
				}
			}
		}
		if len(set.spans(line)) > 0 && !set.MayHold(line) {
			t.Fatalf("MayHold(%q) = false, but it holds a secret", line)
		}
		got, _ := set.Scrub(line)
		for _, s := range secrets[:5] {
			if bytes.Contains(got, []byte(s)) {
				t.Fatalf("line %q kept %q", got, s)
			}
		}
	}
}

// A key of fewer than MinLen bytes is replaced in text only where it
// stands alone as a word, never inside a JSON line; a longer one
// everywhere, inside longer words too.
func TestShortKeysAreReplacedOnlyAsWholeWordsInText(t *testing.T) {
	for _, tc := range []struct{ s, key, want string }{
		{"Incorrect API key provided: sk-abc123.", "sk-abc123", "Incorrect API key provided: [REDACTED]."},
		{`{"error":"bad key sk-abc123"} url=https://h/v1?key=sk-abc123&x=1`, "sk-abc123", `{"error":"bad key [REDACTED]"} url=https://h/v1?key=[REDACTED]&x=1`},
		{"sk-abc123sk-abc123 xsk-abc123 sk-abc1234", "sk-abc123", "[REDACTED][REDACTED] x[REDACTED] [REDACTED]4"},
		{"invalid request: model x not found", "x", "invalid request: model [REDACTED] not found"},
		{"the maximum context exceeded", "x", "the maximum context exceeded"},
		{"rate limited, retry later", "a", "rate limited, retry later"},
		{"key a, a.", "a", "key [REDACTED], [REDACTED]."},
		{"ééx", "x", "ééx"},
		{"no key here", "", "no key here"},
	} {
		if got := New(tc.key).Text(tc.s); got != tc.want {
			t.Errorf("Text(%q) of %q = %q, want %q", tc.s, tc.key, got, tc.want)
		}
	}
	line := []byte(`{"tool_choice":"none","x":"none"}`)
	if got, changed := New("none").Scrub(line); changed || !bytes.Equal(got, line) {
		t.Errorf("a short key scrubbed from a line: %s", got)
	}
}

var errSentinel = errors.New("connection refused")

// What Error returns says nothing of a secret and still is what it wraps.
func TestErrorRedactsTheTextAndKeepsTheCause(t *testing.T) {
	cause := fmt.Errorf("Post %q: %w", "http://h/v1?key=sk-secret-123456", errSentinel)
	err := New("sk-secret-123456").Error(cause)
	if strings.Contains(err.Error(), "sk-secret") || !strings.Contains(err.Error(), "key=[REDACTED]") {
		t.Errorf("error %q", err)
	}
	if !errors.Is(err, errSentinel) {
		t.Errorf("%v does not wrap its cause", err)
	}
	if New("other-secret").Error(cause) != cause || (*Set)(nil).Error(cause) != cause {
		t.Error("an error without a secret is not returned as it is")
	}
}

// Decoding only the windows around a secret's anchor finds what decoding
// the whole line finds, wherever the secrets sit and however close
// together, between escapes of every kind.
func TestScrubbingAroundAnchorsFindsWhatTheWholeLineHolds(t *testing.T) {
	set := New("sk-clé-😀-live-998877", "ab-été-zz-Ω-hello-world-1", "sk-proj-plainAsciiKey99", `k"e\y-<&>-abcdef`)
	if set.unanchored {
		t.Fatal("a secret has no anchor: the case tests nothing")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	far := 0 // lines not decoded whole
	fillers := []string{"x", " ", `\\`, `\"`, `\n`, `\u00e9`, `\u00`, "%", "%4", `\\u00e9`, strings.Repeat("y", 40), strings.Repeat(`\\`, 7)}
	// Long fillers put secrets further apart than a window reaches.
	long := []string{strings.Repeat(`ab\n\"`, 300), strings.Repeat(`\u00e9\\`, 200)}
	for range lines(1000) {
		var line []byte
		for range 1 + rng.IntN(12) {
			switch rng.IntN(3) {
			case 0:
				form, _ := spellAny(rng, set.values[rng.IntN(len(set.values))])
				line = append(line, form...)
			case 1:
				line = append(line, long[rng.IntN(len(long))]...)
			default:
				line = append(line, fillers[rng.IntN(len(fillers))]...)
			}
		}
		if ws := set.windows(line); len(ws) > 0 && (len(ws) > 1 || ws[0] != span{0, len(line)}) {
			far++
		}
		if got, want := set.spans(line), merge(set.find(line)); !slices.Equal(got, want) {
			t.Fatalf("%q: around the anchors %v, in the whole line %v", line, got, want)
		}
	}
	if far < lines(1000)/4 {
		t.Fatalf("only %d lines were not decoded whole: the case tests little", far)
	}
}
