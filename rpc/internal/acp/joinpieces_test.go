package acp

import "testing"

// joinPieces adds a space between two text blocks only where neither side
// is whitespace, judged by runes: a piece ending in "à" (C3 A0) or "अ"
// (E0 A4 85), whose last byte alone would read as NBSP or NEL, still gets
// its space.
func TestJoinedPiecesKeepASpaceAfterAMultibyteEnding(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"voilà", "next"}, "voilà next"},
		{[]string{"अ", "next"}, "अ next"},
		{[]string{"before", "àfter"}, "before àfter"},
		{[]string{"a\u00a0", "b"}, "a\u00a0b"}, // a real NBSP is whitespace
		{[]string{"a\u0085", "b"}, "a\u0085b"}, // and so is a real NEL
		{[]string{"a ", "b"}, "a b"},
		{[]string{"a", "", "b"}, "a b"},
		{[]string{"a", "\nb"}, "a\nb"},
	} {
		if got := joinPieces(tc.pieces); got != tc.want {
			t.Errorf("joinPieces(%q) = %q, want %q", tc.pieces, got, tc.want)
		}
	}
}
