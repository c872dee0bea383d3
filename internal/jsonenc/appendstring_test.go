package jsonenc

import (
	"bytes"
	"testing"
)

// AppendString writes what Marshal writes for the same string (and
// leaves what dst already held alone); QuotedLen is its length.
func FuzzAppendStringMatchesMarshal(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "\b\f\n\r\t\x00\x1f\x7f", "<a>&</a>", "é\u2028\u2029😀", "\xff\xfe bad \xc3", "\ufffd", "tail\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendString([]byte("x"), s)
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendString(%q) = %q, want %q", s, got[1:], want)
		}
		if n := QuotedLen(s); n != len(want) {
			t.Fatalf("QuotedLen(%q) = %d, want %d", s, n, len(want))
		}
		// Sized by QuotedLen, the buffer is not replaced.
		buf := make([]byte, 0, QuotedLen(s))
		if out := AppendString(buf, s); cap(out) != cap(buf) {
			t.Fatalf("AppendString(%q) grew a buffer of QuotedLen bytes", s)
		}
	})
}
