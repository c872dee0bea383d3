package redact

import (
	"strings"
	"testing"
)

// benchBlock is a 64 KiB block of trace lines, the unit the trace's
// flusher scrubs: JSON of English text and code with escapes, no key.
func benchBlock() []byte {
	line := `{"type":"request","t":1764590000000,"call":7,"attempt":1,"bodyPatch":{"base":6,"prefix":20480,"suffix":120,"insert":",{\"role\":\"user\",\"content\":\"read the notes in docs/ and say what the tests miss\\n\"},{\"role\":\"assistant\",\"content\":\"The tests skip the error paths of store/commit.go; see \\\"TestCommit\\\".\"}"}}` + "\n"
	var b strings.Builder
	for b.Len() < 64<<10 {
		b.WriteString(line)
	}
	return []byte(b.String())
}

// BenchmarkScrubBlockWithoutKey: what scrubbing costs a block that holds
// no key (almost every block), for a usual key and for one whose every
// character JSON may escape (no anchor: docs/performance.md, "Traces").
func BenchmarkScrubBlockWithoutKey(b *testing.B) {
	block := benchBlock()
	for _, bc := range []struct {
		name string
		keys []string
	}{
		{"ascii", []string{"sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13)}},
		{"two", []string{"sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13), "hdr-secret-abcdef"}},
		{"unanchored", []string{"ключ-секрет-ÆØÅ"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			set := New(bc.keys...)
			b.SetBytes(int64(len(block)))
			for b.Loop() {
				if _, changed := set.Scrub(block); changed {
					b.Fatal("a block without a key changed")
				}
			}
		})
	}
}

// BenchmarkScrubBlockWithKey: a block that holds a key, \u-escaped, once.
func BenchmarkScrubBlockWithKey(b *testing.B) {
	block := benchBlock()
	key := "sk-clé-live-998877"
	at := len(block) / 2
	block = append(block[:at:at], append([]byte(`sk-cl\u00e9-live-998877`), block[at:]...)...)
	set := New(key)
	b.SetBytes(int64(len(block)))
	for b.Loop() {
		if _, changed := set.Scrub(block); !changed {
			b.Fatal("the key was not found")
		}
	}
}
