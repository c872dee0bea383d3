package tui

import "strings"

// A small highlighter for the code blocks of answers: comments, strings,
// numbers and the keywords of the languages models write most. It is a
// scanner per line with one state carried between lines (inside a block
// comment); anything it does not know shows plain.

type lang struct {
	line     []string // line comment starts
	block    [2]string
	quotes   string
	keywords map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// langs are built on first use, not at init: every process runs package
// init functions, the server too.
func langOf(name string) *lang {
	cLike := func(kw string) *lang {
		return &lang{line: []string{"//"}, block: [2]string{"/*", "*/"}, quotes: "\"'`", keywords: words(kw)}
	}
	switch strings.ToLower(name) {
	case "go", "golang":
		return cLike("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false")
	case "js", "javascript", "ts", "typescript", "jsx", "tsx", "mjs":
		return cLike("async await break case catch class const continue default delete do else export extends false finally for from function if import in instanceof let new null return super switch this throw true try typeof undefined var void while yield interface type")
	case "rust", "rs":
		return cLike("as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while")
	case "c", "h", "cpp", "c++", "cc", "hpp", "java", "kotlin", "kt", "swift", "cs", "csharp", "scala", "dart", "zig":
		return cLike("auto break case char class const continue default do double else enum extern false final float for fun func goto if import int let long namespace new nullptr null package private protected public return short signed sizeof static struct switch template this throw true try typedef union unsigned using val var void volatile while")
	case "python", "py":
		return &lang{line: []string{"#"}, quotes: "\"'", keywords: words("and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield")}
	case "ruby", "rb":
		return &lang{line: []string{"#"}, quotes: "\"'", keywords: words("begin break case class def do else elsif end ensure false for if in module next nil not or rescue return self then true unless until when while yield")}
	case "sh", "bash", "shell", "zsh", "console", "shellsession":
		return &lang{line: []string{"#"}, quotes: "\"'", keywords: words("if then else elif fi for while until do done case esac in function return export local set unset echo cd")}
	case "json", "jsonc":
		return &lang{line: []string{"//"}, quotes: "\"", keywords: words("true false null")}
	case "yaml", "yml", "toml", "ini":
		return &lang{line: []string{"#"}, quotes: "\"'", keywords: words("true false null yes no")}
	case "sql":
		return &lang{line: []string{"--"}, block: [2]string{"/*", "*/"}, quotes: "'\"", keywords: words("select from where and or not insert into values update set delete create table index join left right inner outer on group by order having limit as null is in like primary key SELECT FROM WHERE AND OR NOT INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT AS NULL IS IN LIKE PRIMARY KEY")}
	}
	return nil
}

// highlight styles the lines of a code block in language name.
func highlight(p Palette, name string, code []string) []string {
	l := langOf(name)
	out := make([]string, len(code))
	inBlock := false
	for i, line := range code {
		line = strings.ReplaceAll(line, "\t", "    ")
		if l == nil || !p.Color {
			out[i] = p.Render(styleCode, line)
			continue
		}
		out[i], inBlock = l.line1(p, line, inBlock)
	}
	return out
}

func (l *lang) line1(p Palette, s string, inBlock bool) (string, bool) {
	var b strings.Builder
	i := 0
	if inBlock {
		end := strings.Index(s, l.block[1])
		if end < 0 {
			return p.Render(styleComment, s), true
		}
		b.WriteString(p.Render(styleComment, s[:end+len(l.block[1])]))
		i = end + len(l.block[1])
	}
	for i < len(s) {
		rest := s[i:]
		if l.block[0] != "" && strings.HasPrefix(rest, l.block[0]) {
			end := strings.Index(rest[len(l.block[0]):], l.block[1])
			if end < 0 {
				b.WriteString(p.Render(styleComment, rest))
				return b.String(), true
			}
			n := len(l.block[0]) + end + len(l.block[1])
			b.WriteString(p.Render(styleComment, rest[:n]))
			i += n
			continue
		}
		comment := false
		for _, lc := range l.line {
			if strings.HasPrefix(rest, lc) && (lc != "#" || i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
				comment = true
			}
		}
		if comment {
			b.WriteString(p.Render(styleComment, rest))
			break
		}
		c := s[i]
		switch {
		case strings.IndexByte(l.quotes, c) >= 0:
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			b.WriteString(p.Render(styleString, s[i:j]))
			i = j
		case c >= '0' && c <= '9' && (i == 0 || !isIdent(s[i-1])):
			j := i
			for j < len(s) && (isIdent(s[j]) || s[j] == '.') {
				j++
			}
			b.WriteString(p.Render(styleNumber, s[i:j]))
			i = j
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			if w := s[i:j]; l.keywords[w] {
				b.WriteString(p.Render(styleKeyword, w))
			} else {
				b.WriteString(w)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), false
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
