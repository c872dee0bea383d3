package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// scanValid scans b in two pieces cut at k, as a value arriving in two
// reads is, and reports whether b is one valid JSON value.
func scanValid(b []byte, k int) bool {
	var s jsonScanner
	n := s.scan(b[:k])
	if !s.ended() {
		n += s.scan(b[k:])
	}
	if !s.ended() {
		s.eof()
	}
	if s.state != scanDone {
		return false
	}
	for _, c := range b[n:] {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

var scannerCases = []string{
	`{}`, `[]`, ` {"a" : [1, -2.5e+3, 0, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]} `,
	`0`, `-0`, `12`, `1.5`, `1e5`, `1E-5`, `-1.25e+10`, `"s"`, `true`, `null`, `false`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `1.e5`, `0x1`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a" 1}`, `[1 2]`, `{]`, `[}`,
	`"a` + "\n" + `"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"a` + "\x01" + `"`, "\"\xff\xfe\"",
	`tru`, `truee`, `nul`, `fals`, `{} {}`, `{}x`, `[1]]`, ``, ` `, `"`, `{"a":"b"`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
}

// The framing's scanner accepts exactly what encoding/json.Valid accepts,
// the nesting limit included, however the input is cut into reads.
func TestJSONScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range scannerCases {
		b := []byte(c)
		want := json.Valid(b)
		for k := 0; k <= len(b); k += max(1, len(b)/50) {
			if got := scanValid(b, k); got != want {
				t.Fatalf("%.80q cut at %d: scanner says valid=%v, encoding/json %v", c, k, got, want)
			}
		}
	}
}

func FuzzJSONScanner(f *testing.F) {
	for _, c := range scannerCases {
		if len(c) < 1000 {
			f.Add([]byte(c), uint16(len(c)/2))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		k := int(cut) % (len(b) + 1)
		if got, want := scanValid(b, k), json.Valid(b); got != want {
			t.Fatalf("%q cut at %d: scanner says valid=%v, encoding/json %v", b, k, got, want)
		}
	})
}
