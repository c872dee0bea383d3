package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loopdev/loop/convo"
	"golang.org/x/text/cases"
)

// Search text is compared in folded form (docs/protocol.md, session/search):
// Unicode full case folding ("STRASSE" and "straße" both fold to
// "strasse"), accents kept as written, every run of white space one space.
// Folding goes rune by rune, since full case folding maps each code point
// on its own; that lets a match in folded text be mapped back to the
// original runes for snippets.

// maxIndexedText bounds the folded text kept of one message, so that one
// huge tool result cannot make an index line unbounded.
const maxIndexedText = 256 << 10

// folder folds runes; the ASCII fast path avoids the caser for most text.
type folder struct {
	caser cases.Caser
	buf   [utf8.UTFMax]byte
}

func newFolder() *folder { return &folder{caser: cases.Fold()} }

// appendRune appends r's folding to dst.
func (f *folder) appendRune(dst []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(dst, byte(r))
	}
	n := utf8.EncodeRune(f.buf[:], r)
	return append(dst, f.caser.Bytes(f.buf[:n])...)
}

// fold returns s folded, white space collapsed and trimmed, at most max
// bytes (cut at a rune boundary of the folded text).
func (f *folder) fold(dst []byte, s string, max int) []byte {
	start := len(dst)
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = len(dst) > start
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		before := len(dst)
		dst = f.appendRune(dst, r)
		if len(dst)-start > max {
			return dst[:before]
		}
	}
	return dst
}

// foldedView is a message's text as a snippet is cut from it: disp holds
// the text's runes with white space collapsed as in the folded form, text
// the folded bytes, and at[i] the index in disp of the rune that folded
// byte i came from.
type foldedView struct {
	disp []rune
	text []byte
	at   []int32
}

func (f *folder) view(s string) foldedView {
	var v foldedView
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = len(v.disp) > 0
			continue
		}
		if space {
			v.disp = append(v.disp, ' ')
			v.text = append(v.text, ' ')
			v.at = append(v.at, int32(len(v.disp)-1))
			space = false
		}
		v.disp = append(v.disp, r)
		n := len(v.text)
		v.text = f.appendRune(v.text, r)
		for range len(v.text) - n {
			v.at = append(v.at, int32(len(v.disp)-1))
		}
		if len(v.text) > maxIndexedText {
			break
		}
	}
	return v
}

// messageSearchText is the text search sees of a message: its text blocks
// (not thinking, tool calls, images or attached files), one per line.
func messageSearchText(m *convo.Message) string {
	// One text block (most messages) is its own text: no copy, which
	// for one long message would be one more of its size.
	var only *convo.Block
	for i := range m.Content {
		if bl := &m.Content[i]; bl.Type == convo.BlockText && bl.Attachment == "" && bl.Text != "" {
			if only != nil {
				only = nil
				break
			}
			only = bl
		}
	}
	if only != nil {
		return only.Text
	}
	var b strings.Builder
	first := ""
	for i := range m.Content {
		bl := &m.Content[i]
		if bl.Type != convo.BlockText || bl.Attachment != "" || bl.Text == "" {
			continue
		}
		if first == "" {
			// The one block of most messages is its text as it is: a
			// prompt's 50 MB are not copied to fold their first 256 KiB.
			first = bl.Text
			continue
		}
		if b.Len() == 0 {
			b.WriteString(first)
		}
		b.WriteByte('\n')
		b.WriteString(bl.Text)
	}
	if b.Len() == 0 {
		return first
	}
	return b.String()
}
