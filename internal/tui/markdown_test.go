package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func plain(src string, width int) []string {
	lines := Markdown(Palette{}, src, width)
	for i, l := range lines {
		lines[i] = ansi.Strip(l)
	}
	return lines
}

func TestMarkdownWrapsParagraphsAtWordBoundaries(t *testing.T) {
	got := plain("The quick brown fox jumps over the lazy dog.", 20)
	want := []string{"The quick brown fox", "jumps over the lazy", "dog."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestMarkdownRendersBlocks(t *testing.T) {
	src := "# Title\n\nSome *em* and **strong** and `code` and [a link](http://x.test).\n\n" +
		"- one\n- two\n  - nested\n1. first\n\n> quoted\n\n| a | bb |\n|---|:--:|\n| 1 | 2 |\n\n```go\nfunc f() {}\n```\n\n---"
	got := strings.Join(plain(src, 60), "\n")
	for _, want := range []string{
		"Title\n\nSome em and strong and code and a link (http://x.test).",
		"• one\n• two\n  • nested\n1. first",
		"│ quoted",
		"a │ bb\n──┼───\n1 │ 2",
		"  func f() {}",
		"────",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestMarkdownStylesWithoutColourUnderNoColor(t *testing.T) {
	out := strings.Join(Markdown(Palette{Color: false}, "# H\n\n**b** `c`\n\n```go\nvar x = 1\n```", 40), "\n")
	if strings.Contains(out, "\x1b[0;1;36m") || strings.Contains(out, ";33m") || strings.Contains(out, ";35m") {
		t.Fatalf("colour without colour: %q", out)
	}
	if !strings.Contains(out, "\x1b[0;1;4m") {
		t.Fatalf("the heading lost its bold and underline: %q", out)
	}
	col := strings.Join(Markdown(Palette{Color: true}, "```go\nvar x = 1\n```", 40), "\n")
	if !strings.Contains(col, "\x1b[35mvar\x1b[0m") {
		t.Fatalf("the keyword is not highlighted: %q", col)
	}
}

func TestStreamingAnswerPrintsOnlyCompleteBlocks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"para one\n\npara two", len("para one\n\n")},
		{"para one\n", 0},
		{"```\ncode\n\nmore code\n", 0},
		{"```\ncode\n\n```\n", len("```\ncode\n\n```\n")},
		{"a\n\n```\nx\n\ny", len("a\n\n")},
	} {
		if got := stableEnd(tc.in); got != tc.want {
			t.Errorf("stableEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
