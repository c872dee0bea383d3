package tui

import (
	"regexp"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
)

// The Markdown the models write: ATX headings, paragraphs, emphasis,
// code spans, links, bullet and numbered lists (nested by indentation),
// block quotes, fenced code blocks (highlighted, highlight.go), GFM
// tables and thematic breaks. Text is wrapped at word boundaries to the
// width it is rendered for; what is not Markdown shows as it is.

// syntax holds the block patterns, compiled on first use rather than in
// a package init function, which every process would run.
var syntax = sync.OnceValue(func() *mdSyntax {
	return &mdSyntax{
		fence:   regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`\\s]*)"),
		heading: regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`),
		rule:    regexp.MustCompile(`^ {0,3}([-*_])(\s*[-*_]){2,}\s*$`),
		item:    regexp.MustCompile(`^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$`),
		quote:   regexp.MustCompile(`^ {0,3}>\s?(.*)$`),
		tableSp: regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`),
	}
})

type mdSyntax struct {
	fence, heading, rule, item, quote, tableSp *regexp.Regexp
}

// Markdown renders src for a terminal width columns wide, as lines.
func Markdown(p Palette, src string, width int) []string {
	width = max(width, 10)
	sx := syntax()
	var out []string
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	gap := false // a blank line separates this block from the one before
	emit := func(block []string) {
		if gap && len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, block...)
		gap = false
	}
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			gap = true
			i++
		case sx.fence.MatchString(line):
			m := sx.fence.FindStringSubmatch(line)
			indent, fence, lang := len(m[1]), m[2], m[3]
			var code []string
			i++
			for i < len(lines) {
				t := strings.TrimSpace(lines[i])
				if strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
					i++
					break
				}
				code = append(code, dedent(lines[i], indent))
				i++
			}
			emit(codeBlock(p, lang, code, width))
		case sx.heading.MatchString(line):
			m := sx.heading.FindStringSubmatch(line)
			st := styleHeading
			if len(m[1]) > 2 {
				st = styleStrong
			}
			text := m[2]
			if len(m[1]) == 1 {
				st.Underline = true
			}
			emit(wrap(inline(p, text, st), width, "", ""))
			i++
		case sx.rule.MatchString(line):
			emit([]string{p.Render(styleFaint, strings.Repeat("─", min(width, 40)))})
			i++
		case i+1 < len(lines) && strings.Contains(line, "|") && sx.tableSp.MatchString(lines[i+1]) && strings.Contains(lines[i+1], "-"):
			rows := [][]string{splitRow(line)}
			i += 2
			for i < len(lines) && strings.Contains(lines[i], "|") && strings.TrimSpace(lines[i]) != "" {
				rows = append(rows, splitRow(lines[i]))
				i++
			}
			emit(table(p, rows, width))
		case sx.quote.MatchString(line):
			var inner []string
			for i < len(lines) && sx.quote.MatchString(lines[i]) {
				inner = append(inner, sx.quote.FindStringSubmatch(lines[i])[1])
				i++
			}
			bar := p.Render(styleFaint, "│ ")
			var block []string
			for _, l := range Markdown(p, strings.Join(inner, "\n"), width-2) {
				block = append(block, bar+p.Render(styleQuote, ansi.Strip(l)))
			}
			emit(block)
		case sx.item.MatchString(line):
			m := sx.item.FindStringSubmatch(line)
			indent, marker, text := len(strings.ReplaceAll(m[1], "\t", "    ")), m[2], m[3]
			i++
			for i < len(lines) && isContinuation(lines[i]) {
				text += " " + strings.TrimSpace(lines[i])
				i++
			}
			bullet := "• "
			if c := marker[0]; c >= '0' && c <= '9' {
				bullet = marker + " "
			}
			lead := strings.Repeat("  ", min(indent/2, 8))
			block := wrap(inline(p, text, Style{}), width, lead+p.Render(Style{Color: cyan}, bullet), lead+strings.Repeat(" ", ansi.StringWidth(bullet)))
			// Items of one list follow each other without a gap.
			if len(out) > 0 && !gap {
				out = append(out, block...)
			} else {
				emit(block)
			}
		default:
			para := strings.TrimSpace(line)
			i++
			for i < len(lines) && isContinuation(lines[i]) {
				para += " " + strings.TrimSpace(lines[i])
				i++
			}
			emit(wrap(inline(p, para, Style{}), width, "", ""))
		}
	}
	return out
}

// isContinuation: line goes on the paragraph or list item before it.
func isContinuation(line string) bool {
	sx := syntax()
	if strings.TrimSpace(line) == "" {
		return false
	}
	for _, re := range []*regexp.Regexp{sx.fence, sx.heading, sx.rule, sx.item, sx.quote} {
		if re.MatchString(line) {
			return false
		}
	}
	return !strings.HasPrefix(strings.TrimSpace(line), "|")
}

func dedent(line string, n int) string {
	for n > 0 && strings.HasPrefix(line, " ") {
		line = line[1:]
		n--
	}
	return line
}

// wrap breaks styled text into lines of at most width columns at word
// boundaries (a word longer than a line is broken), the first line led
// by first and the others by rest.
func wrap(s string, width int, first, rest string) []string {
	w := width - max(ansi.StringWidth(first), ansi.StringWidth(rest))
	lines := strings.Split(ansi.Wrap(s, max(w, 4), ""), "\n")
	for i := range lines {
		lead := rest
		if i == 0 {
			lead = first
		}
		lines[i] = lead + lines[i]
	}
	return lines
}

func codeBlock(p Palette, lang string, code []string, width int) []string {
	var out []string
	for _, l := range highlight(p, lang, code) {
		for _, part := range strings.Split(ansi.Hardwrap(l, max(width-2, 4), true), "\n") {
			out = append(out, "  "+part)
		}
	}
	if len(out) == 0 {
		out = append(out, "")
	}
	return out
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// table lays rows out in columns that fit width: the widest columns are
// narrowed first, and a cell wraps inside its column.
func table(p Palette, rows [][]string, width int) []string {
	n := 0
	for _, r := range rows {
		n = max(n, len(r))
	}
	cells := make([][]string, len(rows))
	widths := make([]int, n)
	for i, r := range rows {
		cells[i] = make([]string, n)
		for j := 0; j < n; j++ {
			if j < len(r) {
				st := Style{}
				if i == 0 {
					st = styleStrong
				}
				cells[i][j] = inline(p, r[j], st)
			}
			widths[j] = max(widths[j], ansi.StringWidth(cells[i][j]))
		}
	}
	sep := 3 // " │ "
	for total(widths)+sep*(n-1) > width {
		widest := 0
		for j := range widths {
			if widths[j] > widths[widest] {
				widest = j
			}
		}
		if widths[widest] <= 3 {
			break
		}
		widths[widest]--
	}
	bar := p.Render(styleFaint, " │ ")
	var out []string
	for i, r := range cells {
		wrapped := make([][]string, n)
		height := 1
		for j, c := range r {
			wrapped[j] = strings.Split(ansi.Wrap(c, widths[j], ""), "\n")
			height = max(height, len(wrapped[j]))
		}
		for k := 0; k < height; k++ {
			var b strings.Builder
			for j := range r {
				if j > 0 {
					b.WriteString(bar)
				}
				part := ""
				if k < len(wrapped[j]) {
					part = wrapped[j][k]
				}
				b.WriteString(part)
				if j < n-1 {
					b.WriteString(strings.Repeat(" ", max(widths[j]-ansi.StringWidth(part), 0)))
				}
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
		if i == 0 {
			var b strings.Builder
			for j, w := range widths {
				if j > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			out = append(out, p.Render(styleFaint, b.String()))
		}
	}
	return out
}

func total(ws []int) int {
	t := 0
	for _, w := range ws {
		t += w
	}
	return t
}

// inline renders emphasis, strong, strike-through, code spans, links and
// backslash escapes over base.
func inline(p Palette, s string, base Style) string {
	var b strings.Builder
	cur := base
	styled := false
	push := func(st Style) {
		b.WriteString(p.set(st))
		styled = true
	}
	if base != (Style{}) {
		push(base)
	}
	strong, em, strike := false, false, false
	restyle := func() {
		st := base
		st.Bold = st.Bold || strong
		st.Italic = st.Italic || em
		st.Strike = st.Strike || strike
		cur = st
		push(cur)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_{}[]()#+-.!|~<>", s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i += 2
		case c == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			ticks := s[i : i+n]
			end := strings.Index(s[i+n:], ticks)
			if end < 0 {
				b.WriteString(ticks)
				i += n
				continue
			}
			code := strings.TrimSpace(s[i+n : i+n+end])
			st := styleCode
			st.Bold = cur.Bold
			push(st)
			b.WriteString(code)
			push(cur)
			i += n + end + n
		case (c == '*' || c == '_') && i+1 < len(s) && s[i+1] == c:
			if !strong && !closes(s, i+2, s[i:i+2]) || c == '_' && !strong && wordBefore(s, i) {
				b.WriteString(s[i : i+2])
				i += 2
				continue
			}
			strong = !strong
			restyle()
			i += 2
		case c == '*' || c == '_':
			if !em && (!closes(s, i+1, s[i:i+1]) || i+1 < len(s) && s[i+1] == ' ') || c == '_' && !em && wordBefore(s, i) {
				b.WriteByte(c)
				i++
				continue
			}
			em = !em
			restyle()
			i++
		case c == '~' && i+1 < len(s) && s[i+1] == '~':
			if !strike && !closes(s, i+2, "~~") {
				b.WriteString("~~")
				i += 2
				continue
			}
			strike = !strike
			restyle()
			i += 2
		case c == '[':
			text, url, n, ok := link(s[i:])
			if !ok {
				b.WriteByte(c)
				i++
				continue
			}
			push(styleLink)
			b.WriteString(text)
			push(cur)
			if url != text && url != "" {
				b.WriteString(" (" + url + ")")
			}
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	if styled {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

// closes reports whether delim occurs again in s after from.
func closes(s string, from int, delim string) bool {
	return from < len(s) && strings.Contains(s[from:], delim)
}

// wordBefore: an underscore inside a word (snake_case) is not emphasis.
func wordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	c := s[i-1]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// link parses [text](url) at the start of s.
func link(s string) (text, url string, n int, ok bool) {
	close := strings.Index(s, "](")
	if close < 0 || strings.Contains(s[:close], "\n") {
		return "", "", 0, false
	}
	end := strings.IndexByte(s[close:], ')')
	if end < 0 {
		return "", "", 0, false
	}
	text, url = s[1:close], s[close+2:close+end]
	if strings.ContainsAny(url, " \t") {
		if q := strings.IndexAny(url, " \t"); q > 0 {
			url = url[:q] // a title after the URL
		}
	}
	return text, url, close + end + 1, true
}
