package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/redact"
)

// Property: a provider's stream may write a key's characters as
// themselves or as \uXXXX escapes (upper or lower case hex, a surrogate
// pair above U+FFFF), once or, inside a string that holds JSON, twice; in
// every such spelling the key leaves no trace: the events read back hold
// it nowhere, decoded or not, and every line is still JSON.
func TestTracesHoldNoNonASCIIKeyInAnyEscapeSpelling(t *testing.T) {
	keys := []string{
		"gw-ключ-секрет-42",         // Cyrillic; no run of 4 plain bytes
		"sk-clé-😀-live-998877",      // Latin-1, an astral character
		"𝔰𝔢𝔠𝔯𝔢𝔱",                    // astral only
		"tok/ÆØÅ+ß=\"q\"\\é",        // with characters JSON may escape as well
		"ab-été-zz-Ω-hello-world-1", // a long plain run beside the rest
	}
	rng := rand.New(rand.NewPCG(4, 22))
	dir := filepath.Join(t.TempDir(), "t")
	secrets := redact.New(keys...)
	w := NewWriter(Options{Dir: dir, Logger: testLogger(t), Secrets: func() *redact.Set { return secrets }})
	const calls = 400
	for n := range calls {
		key := keys[n%len(keys)]
		spelled := spellJSON(rng, key)
		var ev string
		if n%3 == 2 {
			// The event's data is a string that holds JSON: escaped twice.
			inner := `{"message":"bad key ` + spelled + `"}`
			ev = "data: {\"error\":\"" + spellJSON(rng, inner) + "\"}\n\n"
		} else {
			ev = "data: {\"error\":{\"message\":\"bad key " + spelled + "\"}}\n\n"
		}
		if !json.Valid([]byte(strings.TrimSuffix(strings.TrimPrefix(ev, "data: "), "\n\n"))) {
			t.Fatalf("the test made an event that is not JSON: %q", ev)
		}
		c := w.StartCall(Record{Purpose: PurposeMain})
		c.Body(1, []byte(ev))
		c.Finish(Record{})
	}
	w.Close()

	for i, line := range segmentLines(t, dir) {
		if !json.Valid(line) {
			t.Fatalf("line %d is not JSON: %s", i+1, line)
		}
	}
	events := readEvents(t, dir)
	if len(events) != calls {
		t.Fatalf("%d events read back, want %d", len(events), calls)
	}
	for i, e := range events {
		for _, text := range decodedStrings(e.Raw) {
			for _, key := range keys {
				if strings.Contains(text, key) {
					t.Fatalf("event %d %q still holds %q (as %q)", i, e.Raw, key, text)
				}
			}
		}
	}
}

// spellJSON writes s as the inside of a JSON string, each character that
// needs no escape as itself or (at random) as a \u escape with hex digits
// of random case, every other one escaped.
func spellJSON(rng *rand.Rand, s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r < 0x20:
			if rng.IntN(2) == 0 && (r == '"' || r == '\\') {
				b.WriteByte('\\')
				b.WriteRune(r)
				continue
			}
			b.WriteString(uEscape(rng, r))
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'):
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
	h := []byte(fmt.Sprintf("%04x", u))
	for i := range h {
		if rng.IntN(2) == 0 {
			h[i] = bytes.ToUpper(h[i : i+1])[0]
		}
	}
	return `\u` + string(h)
}

// decodedStrings lists raw as it is, every string of the JSON in its
// "data:" lines, and every string of the JSON those strings hold.
func decodedStrings(raw string) []string {
	out := []string{raw}
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
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, l := range strings.Split(raw, "\n") {
		if data, ok := strings.CutPrefix(l, "data: "); ok {
			var v any
			if json.Unmarshal([]byte(data), &v) == nil {
				walk(v)
			}
		}
	}
	return out
}

// segmentLines is every line of dir's segments.
func segmentLines(t *testing.T, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), segmentSuffix) {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
		f.Close()
	}
	return out
}
