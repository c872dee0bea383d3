package jsonenc

import (
	"bytes"
	"strings"
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
		// A long string, into a buffer sized by QuotedLen, is written
		// without replacing the buffer (a short one may take room ahead).
		if s != "" {
			long := strings.Repeat(s, longString/len(s)+1)
			buf := make([]byte, 0, QuotedLen(long))
			if out := AppendString(buf, long); cap(out) != cap(buf) {
				t.Fatalf("AppendString of %d bytes grew a buffer of QuotedLen bytes", len(long))
			}
		}
	})
}
