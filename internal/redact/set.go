// Package redact removes configured secrets (provider keys, header tokens,
// the credentials a base URL carries) from the text Loop lets out: trace
// lines, model errors, log records. The engine builds one Set per
// configuration and hands the same Set to each of them, so that a secret
// is found in the same spellings wherever it would leave
// (docs/configuration.md, "Keys in errors and logs"; docs/traces.md,
// "Redaction").
package redact

import (
	"bytes"
	"slices"
	"strings"
)

// Marker replaces every secret.
const Marker = "[REDACTED]"

// MinLen is the length (in bytes) from which a secret is replaced wherever
// it occurs. A shorter one is replaced only where it stands alone as a
// word, and only in text (Set.Text), never in a JSON line (Set.Scrub): a
// one-letter "key" would otherwise shred every line, and one like "none"
// would break the request bodies a trace replays.
const MinLen = 6

// Set is a compiled set of secrets. Its methods may be called on a nil
// Set, which removes nothing, and from several goroutines at once.
type Set struct {
	values []string // sorted, without duplicates or empty strings
	long   []secret // the values of MinLen bytes or more
	short  []string // the others
	// unanchored: some long value has no anchor, so a line that spells
	// anything escaped may hold it.
	unanchored bool
	// spaced: some long value holds a space, which a query writes as
	// '+'.
	spaced  bool
	longest int
}

// secret is a value of MinLen bytes or more, with what a line must hold
// if it holds the value in any spelling (MayHold).
type secret struct {
	s []byte
	// anchor is the value's longest run of bytes that no JSON or URL
	// encoder escapes; every spelling holds it as it is. Only runs of
	// anchorLen bytes or more are anchors.
	anchor *needle
	// forms are the value and its JSON-escaped forms, for a value without
	// an anchor: a spelling that is none of them holds an escape that
	// jsonForms does not write (escapedMarks).
	forms []needle
}

// anchorLen: a shorter run would pass too many lines on to the full search.
const anchorLen = 4

// New compiles values. Empty strings and duplicates are ignored.
func New(values ...string) *Set {
	s := &Set{}
	for _, v := range values {
		if v != "" {
			s.values = append(s.values, v)
		}
	}
	slices.Sort(s.values)
	s.values = slices.Compact(s.values)
	for _, v := range s.values {
		if len(v) < MinLen {
			s.short = append(s.short, v)
			continue
		}
		sec := secret{s: []byte(v)}
		s.spaced = s.spaced || strings.Contains(v, " ")
		if a, b := longestPlainRun(v); b-a >= anchorLen {
			n := newNeedle([]byte(v[a:b]))
			sec.anchor = &n
		} else {
			s.unanchored = true
			for _, f := range jsonForms(v) {
				sec.forms = append(sec.forms, newNeedle(f))
			}
		}
		s.long = append(s.long, sec)
		s.longest = max(s.longest, maxSpelling*len(v))
	}
	return s
}

// maxSpelling bounds how many bytes of a line one byte of a secret takes
// in the longest spelling Scrub finds: a byte \u-escaped (6) inside a
// string that is itself escaped (6 each).
const maxSpelling = 36

// Empty reports whether s removes nothing.
func (s *Set) Empty() bool { return s == nil || len(s.values) == 0 }

// Equal reports whether s and o hold the same secrets.
func (s *Set) Equal(o *Set) bool {
	if s.Empty() || o.Empty() {
		return s.Empty() == o.Empty()
	}
	return s == o || slices.Equal(s.values, o.values)
}

// Longest is how many bytes of a line the longest spelling of a secret
// may take: a search of a window of a line must reach this far past the
// part it is about.
func (s *Set) Longest() int {
	if s == nil {
		return 0
	}
	return s.longest
}

// MayHold reports whether b may hold a secret Scrub replaces; false means
// it certainly holds none. It looks each secret up by its anchor, several
// times faster than a search for the whole of every spelling
// (docs/performance.md, "Traces").
func (s *Set) MayHold(b []byte) bool {
	if s == nil {
		return false
	}
	for i := range s.long {
		sec := &s.long[i]
		if sec.anchor != nil {
			if sec.anchor.in(b) {
				return true
			}
			continue
		}
		for j := range sec.forms {
			if sec.forms[j].in(b) {
				return true
			}
		}
	}
	return s.unanchored && escapedMarks(b, s.spaced)
}

// Scrub replaces every secret of MinLen bytes or more in a line with
// Marker, in every spelling (spans): as it is, percent-encoded, and
// JSON-escaped once or twice, each character as itself, by its short
// escape or as \uXXXX in either case (a surrogate pair above U+FFFF). A
// replacement takes whole escapes with it, so that a JSON line stays
// JSON. It reports whether it replaced anything; line itself is never
// changed.
func (s *Set) Scrub(line []byte) ([]byte, bool) {
	if !s.MayHold(line) {
		return line, false
	}
	spans := s.spans(line)
	if len(spans) == 0 {
		return line, false
	}
	return replaceSpans(line, spans), true
}

// Text is t without any secret: those Scrub replaces, and shorter ones
// where they stand alone as a word (an occurrence inside a longer word is
// text that happens to hold a short key's letters).
func (s *Set) Text(t string) string {
	if s.Empty() {
		return t
	}
	if b, changed := s.Scrub([]byte(t)); changed {
		t = string(b)
	}
	for _, k := range s.short {
		t = replaceWord(t, k)
	}
	return t
}

// replaceWord replaces the occurrences of key in s that are whole words.
func replaceWord(s, key string) string {
	if !strings.Contains(s, key) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			break
		}
		end := i + len(key)
		if (i == 0 || !inWord(s[i-1])) && (end == len(s) || !inWord(s[end])) {
			b.WriteString(s[:i])
			b.WriteString(Marker)
			s = s[end:]
			continue
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
	}
	b.WriteString(s)
	return b.String()
}

// inWord reports whether c can continue a key-like word: letters, digits,
// '-', '_', and any byte of a non-ASCII character.
func inWord(c byte) bool {
	return c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// replaceSpans replaces each of spans (sorted by start, not overlapping)
// in line with Marker.
func replaceSpans(line []byte, spans []span) []byte {
	out := make([]byte, 0, len(line))
	at := 0
	for _, sp := range spans {
		out = append(append(out, line[at:sp.from]...), Marker...)
		at = sp.to
	}
	return append(out, line[at:]...)
}

// plainByte marks the bytes no JSON or URL encoder escapes: ASCII letters,
// digits and URL's unreserved marks.
func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}

// longestPlainRun is v[a:b], v's longest run of plain bytes.
func longestPlainRun(v string) (a, b int) {
	for i := 0; i < len(v); {
		if !plainByte(v[i]) {
			i++
			continue
		}
		j := i
		for j < len(v) && plainByte(v[j]) {
			j++
		}
		if j-i > b-a {
			a, b = i, j
		}
		i = j
	}
	return a, b
}

// escapedMarks reports whether b spells something in a way other than as
// it is or as jsonForms does: a \u or \/ escape, or percent-encoding
// (with plus, a space as a query writes it).
func escapedMarks(b []byte, plus bool) bool {
	if bytes.IndexByte(b, '%') >= 0 || plus && bytes.IndexByte(b, '+') >= 0 {
		return true
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\\' && (b[i+1] == 'u' || b[i+1] == '/') {
			return true
		}
	}
	return false
}
