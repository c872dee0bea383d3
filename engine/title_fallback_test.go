package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFallbackTitleIsTheFirstLineCutAtAWordBoundary(t *testing.T) {
	long := "Please refactor the session store so that every commit is written with one fsync and nothing else"
	for _, c := range []struct{ in, want string }{
		{"hi", "hi"},
		{"\n\n  fix   the\tbug  \nand then the rest", "fix the bug"},
		{long, "Please refactor the session store so that every commit is…"},
		{"one, two, three, four, five, six, seven, eight, nine, ten, eleven", "one, two, three, four, five, six, seven, eight, nine, ten…"},
		{strings.Repeat("x", 80), strings.Repeat("x", 59) + "…"},
		{"colour \x1b[31mred\x1b[0m", "colour [31mred [0m"},
		{"Attached: notes.md, an image", "Attached: notes.md, an image"},
		{"   \n\t", ""},
	} {
		got := fallbackTitle(c.in)
		if got != c.want {
			t.Errorf("fallbackTitle(%q) = %q, want %q", c.in, got, c.want)
		}
		if n := utf8.RuneCountInString(got); n > maxFallbackTitle {
			t.Errorf("fallbackTitle(%q) has %d characters", c.in, n)
		}
	}
}
