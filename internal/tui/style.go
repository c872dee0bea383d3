package tui

import "strings"

// Style is a set of SGR attributes and at most one colour, written as
// escape sequences only when the terminal is to get them.
type Style struct {
	Bold, Dim, Italic, Underline, Strike, Reverse bool
	Color                                         int // an SGR foreground code (31-37, 90-97); 0 for none
}

// Palette renders styles for one terminal: colour on or off (NO_COLOR,
// --color never keep bold, italic and underline, which are not colour).
type Palette struct {
	Color bool
}

func (s Style) codes(color bool) []string {
	var c []string
	add := func(on bool, code string) {
		if on {
			c = append(c, code)
		}
	}
	add(s.Bold, "1")
	add(s.Dim && color, "2")
	add(s.Italic, "3")
	add(s.Underline, "4")
	add(s.Reverse, "7")
	add(s.Strike, "9")
	if color && s.Color != 0 {
		c = append(c, itoa(s.Color))
	}
	return c
}

// Render wraps text in st's attributes, resetting them after.
func (p Palette) Render(st Style, text string) string {
	c := st.codes(p.Color)
	if len(c) == 0 || text == "" {
		return text
	}
	return "\x1b[" + strings.Join(c, ";") + "m" + text + "\x1b[0m"
}

// set is the sequence that makes st the current attributes whatever they
// were (a reset first), for nested inline styles.
func (p Palette) set(st Style) string {
	c := st.codes(p.Color)
	return "\x1b[0;" + strings.Join(c, ";") + "m"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// The colours the chat uses, by role.
const (
	red     = 31
	green   = 32
	yellow  = 33
	blue    = 34
	magenta = 35
	cyan    = 36
	grey    = 90
)

var (
	styleHeading = Style{Bold: true, Color: cyan}
	styleStrong  = Style{Bold: true}
	styleEm      = Style{Italic: true}
	styleCode    = Style{Color: yellow}
	styleLink    = Style{Underline: true, Color: blue}
	styleQuote   = Style{Italic: true, Color: grey}
	styleFaint   = Style{Dim: true, Color: grey}
	styleUser    = Style{Bold: true}
	styleOK      = Style{Color: green}
	styleErr     = Style{Color: red}
	styleAsk     = Style{Bold: true, Color: yellow}
	styleAdd     = Style{Color: green}
	styleDel     = Style{Color: red}
	styleHunk    = Style{Color: cyan}
	styleKeyword = Style{Color: magenta}
	styleString  = Style{Color: green}
	styleComment = Style{Italic: true, Color: grey}
	styleNumber  = Style{Color: cyan}
	styleSelect  = Style{Reverse: true}
)
