package redact

import (
	"bytes"

	"github.com/loopdev/loop/internal/jsonenc"
)

// A line almost never holds a secret, and is searched for every one.
// bytes.Contains costs about 0.75 ns a byte per string, because a key's
// first bytes ("sk-...") are common in text; a needle is instead looked up
// by its rarest byte with bytes.IndexByte, which is several times faster
// (docs/performance.md, "Traces").
type needle struct {
	s      []byte
	anchor byte // the rarest byte of s in text
	at     int  // its offset in s
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
func (n *needle) in(line []byte) bool { return n.index(line) >= 0 }

// index is where n.s first starts in line, or -1.
func (n *needle) index(line []byte) int {
	// The anchor's position p must leave room for the whole of n.s:
	// n.at <= p <= len(line)-len(n.s)+n.at.
	end := len(line) - len(n.s) + n.at + 1
	fails := 0
	for i := n.at; i < end; {
		j := bytes.IndexByte(line[i:end], n.anchor)
		if j < 0 {
			return -1
		}
		i += j
		if bytes.Equal(line[i-n.at:i-n.at+len(n.s)], n.s) {
			return i - n.at
		}
		i++
		// A line full of the anchor byte: the general search is faster.
		if fails++; fails > 8+i>>4 {
			if k := bytes.Index(line[i-n.at:], n.s); k >= 0 {
				return i - n.at + k
			}
			return -1
		}
	}
	return -1
}

// jsonForms are v as it is and as jsonenc escapes it inside a string, once
// and twice (a string that holds JSON).
func jsonForms(v string) [][]byte {
	forms := [][]byte{[]byte(v)}
	for range 2 {
		last := forms[len(forms)-1]
		q, err := jsonenc.Marshal(string(last))
		if err != nil || bytes.Equal(q[1:len(q)-1], last) {
			break
		}
		forms = append(forms, q[1:len(q)-1])
	}
	return forms
}
