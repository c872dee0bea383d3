package tui

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/rivo/uniseg"
)

// editor is the input being typed: text of one or more lines and a
// cursor, which moves and deletes by grapheme cluster, so that an emoji
// made of several code points, or a letter with combining marks, is one
// step and one deletion, and is measured as the terminal draws it.
type editor struct {
	text string
	cur  int // byte offset in text, at a cluster boundary

	history []string // what was sent, oldest first
	hpos    int      // len(history) when not browsing it
	draft   string   // the text being typed when browsing began
}

func (e *editor) set(s string) { e.text, e.cur = s, len(s) }

func (e *editor) reset() {
	e.set("")
	e.hpos = len(e.history)
}

// remember adds a sent input to the history.
func (e *editor) remember(s string) {
	if n := len(e.history); n == 0 || e.history[n-1] != s {
		e.history = append(e.history, s)
	}
	e.hpos = len(e.history)
}

// insert puts s at the cursor, without control characters but newlines
// (tabs become spaces).
func (e *editor) insert(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\t", "    ")
	s = strings.Map(func(r rune) rune {
		if r != '\n' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	e.text = e.text[:e.cur] + s + e.text[e.cur:]
	e.cur += len(s)
}

// prev and next are the cluster boundaries around the cursor.
func (e *editor) prev() int {
	last := 0
	for g := uniseg.NewGraphemes(e.text[:e.cur]); g.Next(); {
		from, _ := g.Positions()
		last = from
	}
	return last
}

func (e *editor) next() int {
	if e.cur >= len(e.text) {
		return e.cur
	}
	c, _, _, _ := uniseg.FirstGraphemeClusterInString(e.text[e.cur:], -1)
	return e.cur + len(c)
}

func (e *editor) left()  { e.cur = e.prev() }
func (e *editor) right() { e.cur = e.next() }

func (e *editor) backspace() {
	p := e.prev()
	e.text = e.text[:p] + e.text[e.cur:]
	e.cur = p
}

func (e *editor) del() {
	n := e.next()
	e.text = e.text[:e.cur] + e.text[n:]
}

func (e *editor) lineStart() int { return strings.LastIndexByte(e.text[:e.cur], '\n') + 1 }

func (e *editor) lineEnd() int {
	if i := strings.IndexByte(e.text[e.cur:], '\n'); i >= 0 {
		return e.cur + i
	}
	return len(e.text)
}

func (e *editor) home() { e.cur = e.lineStart() }
func (e *editor) end()  { e.cur = e.lineEnd() }

// killEnd and killStart are Ctrl-K and Ctrl-U: to the end or start of the line.
func (e *editor) killEnd() {
	end := e.lineEnd()
	if end == e.cur && end < len(e.text) {
		end++ // at a line's end: join the next line
	}
	e.text = e.text[:e.cur] + e.text[end:]
}

func (e *editor) killStart() {
	s := e.lineStart()
	e.text = e.text[:s] + e.text[e.cur:]
	e.cur = s
}

// wordLeft and wordRight move over spaces, then a word.
func (e *editor) wordLeft() int {
	i := e.cur
	for i > 0 && isSpace(e.text[i-1]) {
		i--
	}
	for i > 0 && !isSpace(e.text[i-1]) {
		i--
	}
	return i
}

func (e *editor) wordRight() int {
	i := e.cur
	for i < len(e.text) && isSpace(e.text[i]) {
		i++
	}
	for i < len(e.text) && !isSpace(e.text[i]) {
		i++
	}
	return i
}

// killWord is Ctrl-W: the word before the cursor.
func (e *editor) killWord() {
	w := e.wordLeft()
	e.text = e.text[:w] + e.text[e.cur:]
	e.cur = w
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' }

// up and down move between the lines of the input, keeping the column;
// on its first or last line they go through the history. They report
// whether anything changed.
func (e *editor) up() bool {
	if s := e.lineStart(); s > 0 {
		col := ansi.StringWidth(e.text[s:e.cur])
		ps := strings.LastIndexByte(e.text[:s-1], '\n') + 1
		e.cur = atColumn(e.text, ps, s-1, col)
		return true
	}
	if e.hpos == 0 {
		return false
	}
	if e.hpos == len(e.history) {
		e.draft = e.text
	}
	e.hpos--
	e.set(e.history[e.hpos])
	return true
}

func (e *editor) down() bool {
	if end := e.lineEnd(); end < len(e.text) {
		col := ansi.StringWidth(e.text[e.lineStart():e.cur])
		ne := strings.IndexByte(e.text[end+1:], '\n')
		if ne < 0 {
			ne = len(e.text)
		} else {
			ne += end + 1
		}
		e.cur = atColumn(e.text, end+1, ne, col)
		return true
	}
	if e.hpos >= len(e.history) {
		return false
	}
	e.hpos++
	if e.hpos == len(e.history) {
		e.set(e.draft)
	} else {
		e.set(e.history[e.hpos])
	}
	return true
}

// atColumn is the boundary in text[from:to] nearest to display column col.
func atColumn(text string, from, to, col int) int {
	w := 0
	i := from
	for g := uniseg.NewGraphemes(text[from:to]); g.Next(); {
		cw := ansi.StringWidth(g.Str())
		if w+cw > col {
			break
		}
		w += cw
		_, end := g.Positions()
		i = from + end
	}
	return i
}

// render lays the input out in width columns, each line led by prompt
// (the first) or by as many spaces (the others); long lines wrap. It
// returns the lines and the cursor's row and column.
func (e *editor) render(prompt string, width int) (lines []string, row, col int) {
	pw := ansi.StringWidth(prompt)
	avail := max(width-pw, 1)
	pad := strings.Repeat(" ", pw)
	var cur strings.Builder
	w := 0
	lead := prompt
	flush := func() {
		lines = append(lines, lead+cur.String())
		cur.Reset()
		w = 0
		lead = pad
	}
	row, col = -1, 0
	mark := func() {
		if row < 0 {
			row, col = len(lines), pw+w
			if w >= avail { // the cursor after a full line goes to the next
				row, col = len(lines)+1, pw
			}
		}
	}
	for g := uniseg.NewGraphemes(e.text); g.Next(); {
		from, _ := g.Positions()
		if from == e.cur {
			mark()
		}
		s := g.Str()
		if s == "\n" {
			flush()
			continue
		}
		cw := ansi.StringWidth(s)
		if w+cw > avail {
			flush()
		}
		cur.WriteString(s)
		w += cw
	}
	if e.cur >= len(e.text) {
		mark()
	}
	flush()
	if row >= len(lines) {
		lines = append(lines, pad)
	}
	return lines, row, col
}
