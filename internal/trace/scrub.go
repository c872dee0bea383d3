package trace

import (
	"bytes"
	"unsafe"
)

// A line is searched for every form of every secret (scrubLine), and
// almost never holds one. bytes.Contains costs about 0.75 ns a byte per
// form, because a key's first bytes ("sk-...") are common in text; a
// scrubber instead looks each form up by its rarest byte with
// bytes.IndexByte, which is several times faster, and only a line that
// holds a form goes through scrubLine (docs/performance.md, "Traces").
type scrubber struct {
	from    []string // the Secrets slice it was built from
	needles []needle
	longest int // the longest needle's length
}

// needle is one form of a secret: its bytes, and the one it is found by
// (the rarest in text) with its offset.
type needle struct {
	s      []byte
	anchor byte
	at     int
}

func newScrubber(secrets []string) *scrubber {
	sc := &scrubber{from: secrets}
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		raw := []byte(s)
		// The forms scrubLine replaces: the secret, then up to twice
		// JSON-escaped.
		for range 3 {
			sc.needles = append(sc.needles, newNeedle(raw))
			sc.longest = max(sc.longest, len(raw))
			if !escapes(raw) {
				break
			}
			esc := appendJSONString(nil, raw)
			raw = esc[1 : len(esc)-1]
		}
	}
	return sc
}

func newNeedle(s []byte) needle {
	n := needle{s: s, anchor: s[0]}
	for i, c := range s {
		if byteWeight(c) < byteWeight(n.anchor) {
			n.anchor, n.at = c, i
		}
	}
	return n
}

// byteWeight is roughly how often c appears in a trace line (JSON of
// English text and code): lower is rarer.
func byteWeight(c byte) int {
	const lower = "etaoinshrdlcumwfgypbvkjxqz" // most to least common
	switch {
	case c >= 'a' && c <= 'z':
		return 1000 - 30*bytes.IndexByte([]byte(lower), c)
	case c >= 'A' && c <= 'Z':
		return 50 - bytes.IndexByte([]byte(lower), c-'A'+'a')
	case c >= '0' && c <= '9':
		return 300
	case c == ' ' || c == '"':
		return 2000
	case c == ',' || c == ':' || c == '{' || c == '}' || c == '\\' || c == '/' || c == '.' || c == '-' || c == '\n':
		return 500
	case c >= 0x80:
		return 100
	}
	return 60
}

// in reports whether line holds n.s.
func (n *needle) in(line []byte) bool {
	// The anchor's position p must leave room for the whole form:
	// n.at <= p <= len(line)-len(n.s)+n.at.
	end := len(line) - len(n.s) + n.at + 1
	fails := 0
	for i := n.at; i < end; {
		j := bytes.IndexByte(line[i:end], n.anchor)
		if j < 0 {
			return false
		}
		i += j
		if bytes.Equal(line[i-n.at:i-n.at+len(n.s)], n.s) {
			return true
		}
		i++
		// A line full of the anchor byte: the general search is faster.
		if fails++; fails > 8+i>>4 {
			return bytes.Contains(line[i-n.at:], n.s)
		}
	}
	return false
}

// holds reports whether line may hold a secret sc scrubs.
func (sc *scrubber) holds(line []byte) bool {
	for i := range sc.needles {
		if sc.needles[i].in(line) {
			return true
		}
	}
	return false
}

// scrub is scrubLine(line, secrets) for the secrets sc was built from.
func (sc *scrubber) scrub(line []byte) ([]byte, bool) {
	if sc.holds(line) {
		return scrubLine(line, sc.from)
	}
	return line, false
}

// scrubbed is b scrubbed by sc; nil scrubs nothing.
func scrubbed(sc *scrubber, b []byte) []byte {
	if sc == nil {
		return b
	}
	out, _ := sc.scrub(b)
	return out
}

// scrubberFor returns the scrubber of secrets, built once per Secrets
// slice (the engine's changes only when its configuration is reloaded).
func (w *Writer) scrubberFor(secrets []string) *scrubber {
	if sc := w.scrubs.Load(); sc != nil && sameSlice(sc.from, secrets) {
		return sc
	}
	sc := newScrubber(secrets)
	w.scrubs.Store(sc)
	return sc
}

func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}
