package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// model is the chat's screen: what is finished goes to the scrollback
// (print), the rest is the view, redrawn below it.
type model struct {
	app App
	pal Palette

	width, height int
	// sized: a frame has been drawn since the terminal's size last
	// changed, so printing above it may go on. The renderer forgets where
	// its frame is on a resize, and a print before the next frame lands
	// in the wrong rows (over what was on the screen before the chat).
	sized   bool
	writes  func() int64 // the screen's writes so far
	resized int64        // the writes when the size last changed

	ed      editor
	hint    string // a line under the input: completions
	ctrlC   bool   // the last key was Ctrl-C at an idle prompt
	running bool
	since   time.Time // when the run started, for the elapsed time
	frame   int       // the spinner's
	ticking bool
	notice  string

	answer  string // the streaming answer not yet printed, Markdown
	printed bool   // part of the streaming answer is printed

	ask    *Ask
	picker *picker

	out      []string // lines to print, in order
	printing bool     // a print is on its way to the terminal
}

func newModel(app App, pal Palette) *model {
	return &model{app: app, pal: pal, width: 80, height: 24, writes: func() int64 { return 1 }}
}

// printedMsg says that the last print reached the renderer.
type printedMsg struct{}

type tickMsg struct{}

// frameMsg asks again whether a frame has been drawn.
type frameMsg struct{}

// waitFrame checks once a frame's time whether the renderer has drawn.
func (m *model) waitFrame() tea.Cmd {
	return tea.Tick(time.Second/60, func(time.Time) tea.Msg { return frameMsg{} })
}

func (m *model) Init() tea.Cmd { return nil }

// print queues lines for the scrollback; flush sends them in order, one
// print at a time (commands run concurrently: two prints in flight could
// swap).
func (m *model) print(lines ...string) { m.out = append(m.out, lines...) }

func (m *model) flush() tea.Cmd {
	if m.printing || !m.sized || len(m.out) == 0 {
		return nil
	}
	// A line as wide as the terminal or wider is wrapped here, at word
	// boundaries, to one column less: the renderer counts the lines it
	// prints, and a line the terminal wraps would throw that count off;
	// and the erase it writes after each line takes the last character
	// of a full one (the cursor is still on it).
	limit := m.width - 1
	var lines []string
	for _, l := range m.out {
		if ansi.StringWidth(l) <= limit {
			lines = append(lines, l)
			continue
		}
		lines = append(lines, strings.Split(ansi.Wrap(l, limit, ""), "\n")...)
	}
	// No more at once than fits above the view: the renderer makes room
	// by scrolling, then moves up over the new lines and the view, and a
	// move past the screen's top row stops there: the lines land too low,
	// a line of the view stays in the scrollback and the last one printed
	// is erased.
	m.out = nil
	room := max(m.height-strings.Count(m.View().Content, "\n")-3, 1)
	if len(lines) > room {
		m.out, lines = lines[room:], lines[:room]
	}
	text := strings.Join(lines, "\n")
	m.printing = true
	return tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} })
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	return m, tea.Batch(cmd, m.flush())
}

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 10), max(msg.Height, 4)
		m.sized, m.resized = false, m.writes()
		return m.waitFrame()
	case frameMsg:
		if m.writes() > m.resized {
			m.sized = true
			return nil
		}
		return m.waitFrame()
	case printedMsg:
		m.printing = false
	case tickMsg:
		m.ticking = false
		if m.running {
			m.frame++
			return m.tick()
		}
	case Say:
		m.say(msg)
	case UserLine:
		m.endAnswer()
		m.print(m.userLines(msg.Text)...)
	case Delta:
		m.notice = ""
		m.answer += msg.Text
		m.printStable()
	case AnswerEnd:
		m.endAnswer()
	case ToolStart:
		m.endAnswer()
		m.print(m.pal.Render(styleFaint, "  · ") + msg.Line)
	case ToolEnd:
		mark := m.pal.Render(styleOK, "✓")
		if !msg.OK {
			mark = m.pal.Render(styleErr, "✗")
		}
		m.print("    " + mark + " " + m.pal.Render(styleFaint, msg.Line))
	case Busy:
		m.running, m.notice = msg.On, ""
		if msg.On {
			m.since, m.frame = time.Now(), 0
			return m.tick()
		}
	case Notice:
		m.notice = msg.Text
	case Ask:
		m.endAnswer()
		a := msg
		m.ask = &a
	case Withdraw:
		if m.ask != nil {
			m.print(m.pal.Render(styleFaint, "  ? "+m.ask.Title+": the approval was withdrawn"))
			m.ask = nil
		}
	case Transcript:
		m.transcript(msg.Items)
	case Pick:
		m.picker = newPicker(msg.Items)
	case pickResults:
		if m.picker != nil && msg.seq == m.picker.seq {
			m.picker.items, m.picker.sel = msg.items, 0
		}
	case Quit:
		m.endAnswer()
		return tea.Quit
	case tea.PasteMsg:
		if m.picker != nil {
			return m.pickerType(msg.Content)
		}
		if m.ask == nil {
			m.ed.insert(msg.Content)
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return nil
}

func (m *model) tick() tea.Cmd {
	if m.ticking {
		return nil
	}
	m.ticking = true
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// say prints Loop's own line above the streaming answer, which goes on
// below it: a line never splits the answer.
func (m *model) say(s Say) {
	st := styleFaint
	switch s.Kind {
	case Error:
		st = styleErr
	case Plain:
		st = Style{}
	}
	for _, l := range strings.Split(s.Text, "\n") {
		m.print(m.pal.Render(st, l))
	}
}

func (m *model) userLines(text string) []string {
	var out []string
	for i, l := range strings.Split(text, "\n") {
		lead := "> "
		if i > 0 {
			lead = "  "
		}
		for _, w := range wrap(l, m.width-1, lead, "  ") {
			out = append(out, m.pal.Render(styleUser, w))
		}
	}
	return out
}

// printStable prints the blocks of the streaming answer that are
// complete: everything before its last blank line outside a code fence.
func (m *model) printStable() {
	cut := stableEnd(m.answer)
	if cut <= 0 {
		return
	}
	m.printAnswer(m.answer[:cut])
	m.answer = m.answer[cut:]
}

func (m *model) printAnswer(md string) {
	if strings.TrimSpace(md) == "" {
		return
	}
	if m.printed {
		m.print("")
	}
	m.print(Markdown(m.pal, md, m.width-1)...)
	m.printed = true
}

// endAnswer prints what is left of the streaming answer.
func (m *model) endAnswer() {
	m.printAnswer(m.answer)
	m.answer, m.printed = "", false
}

// stableEnd is where the complete blocks of a streaming answer end: just
// after its last blank line outside a fenced code block, or 0.
func stableEnd(s string) int {
	end, pos := 0, 0
	fence := ""
	for pos < len(s) {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break // the last line is not complete yet
		}
		line := s[pos : pos+nl]
		pos += nl + 1
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
				end = pos
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case t == "":
			end = pos
		}
	}
	return end
}

func (m *model) transcript(items []Item) {
	for _, it := range items {
		switch it.Role {
		case "user":
			m.print(m.userLines(it.Text)...)
		case "assistant":
			m.print(Markdown(m.pal, it.Text, m.width-1)...)
		case "tool":
			mark := m.pal.Render(styleOK, "✓")
			if !it.OK {
				mark = m.pal.Render(styleErr, "✗")
			}
			m.print(m.pal.Render(styleFaint, "  · ") + it.Text + " " + mark)
		default:
			m.print(m.pal.Render(styleFaint, it.Text))
		}
	}
}

func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if m.picker != nil {
		return m.pickerKey(k)
	}
	s := k.String()
	if s != "ctrl+c" {
		m.ctrlC = false
	}
	if m.ask != nil {
		return m.askKey(k)
	}
	m.hint = ""
	switch s {
	case "ctrl+c":
		if m.app.Interrupt() {
			return nil
		}
		if m.ctrlC {
			m.app.Exit()
			return nil
		}
		m.ctrlC = true
		m.ed.reset()
		m.print(m.pal.Render(styleFaint, "(Ctrl-C again or Ctrl-D exits)"))
	case "ctrl+d":
		if m.ed.text == "" {
			m.app.Exit()
		} else {
			m.ed.del()
		}
	case "enter":
		if strings.HasSuffix(m.ed.text[:m.ed.cur], `\`) {
			m.ed.backspace()
			m.ed.insert("\n")
			break
		}
		m.send()
	case "shift+enter", "alt+enter", "ctrl+j":
		m.ed.insert("\n")
	case "tab":
		m.complete()
	case "left", "ctrl+b":
		m.ed.left()
	case "right", "ctrl+f":
		m.ed.right()
	case "alt+left", "ctrl+left", "alt+b":
		m.ed.cur = m.ed.wordLeft()
	case "alt+right", "ctrl+right", "alt+f":
		m.ed.cur = m.ed.wordRight()
	case "home", "ctrl+a":
		m.ed.home()
	case "end", "ctrl+e":
		m.ed.end()
	case "backspace", "ctrl+h":
		m.ed.backspace()
	case "delete":
		m.ed.del()
	case "ctrl+k":
		m.ed.killEnd()
	case "ctrl+u":
		m.ed.killStart()
	case "ctrl+w", "alt+backspace":
		m.ed.killWord()
	case "up", "ctrl+p":
		m.ed.up()
	case "down", "ctrl+n":
		m.ed.down()
	case "ctrl+l":
		return tea.ClearScreen
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
			m.ed.insert(k.Text)
		}
	}
	return nil
}

// send hands the input to the chat; at an idle prompt (and for a slash
// command at any time) it shows first as typed.
func (m *model) send() {
	text := m.ed.text
	if strings.TrimSpace(text) == "" {
		m.ed.reset()
		return
	}
	m.ed.remember(text)
	m.ed.reset()
	if !m.running {
		m.endAnswer()
	}
	if !m.running || strings.HasPrefix(text, "/") {
		m.print(m.userLines(text)...)
	}
	m.app.Submit(text)
}

// complete is Tab on a slash command: the one it can only be, or as much
// as the candidates share, listed under the input.
func (m *model) complete() {
	t := m.ed.text
	if !strings.HasPrefix(t, "/") || strings.ContainsAny(t, " \n") {
		return
	}
	var cands []string
	for _, c := range m.app.Commands() {
		if strings.HasPrefix(c, t) {
			cands = append(cands, c)
		}
	}
	switch len(cands) {
	case 0:
		return
	case 1:
		m.ed.set(cands[0] + " ")
		return
	}
	common := cands[0]
	for _, c := range cands[1:] {
		for !strings.HasPrefix(c, common) {
			common = common[:len(common)-1]
		}
	}
	m.ed.set(common)
	m.hint = strings.Join(cands, "  ")
}

func (m *model) askKey(k tea.KeyPressMsg) tea.Cmd {
	var d Decision
	var said string
	switch key := strings.ToLower(k.Text); {
	case key == "y" && m.ask.YesNo:
		d, said = AllowOnce, "yes"
	case key == "n" && m.ask.YesNo:
		d, said = Reject, "no"
	case key == "y":
		d, said = AllowOnce, "allowed once"
	case key == "a" && !m.ask.YesNo:
		d, said = AllowSession, "allowed for this session"
	case key == "n":
		d, said = Reject, "rejected"
	case m.ask.YesNo && (k.String() == "esc" || k.String() == "ctrl+c"):
		d, said = Cancel, "cancelled"
	default:
		if k.String() == "ctrl+c" {
			m.app.Interrupt()
		}
		return nil
	}
	a := m.ask
	m.ask = nil
	m.print(m.pal.Render(styleAsk, "  ? ") + a.Title + m.pal.Render(styleFaint, ": "+said))
	a.Answer(d)
	return nil
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// The prompts: "… " while a run is active (what is typed then waits in
// the queue), "> " at an idle session.
const (
	promptIdle    = "> "
	promptRunning = "… "
)

func (m *model) View() tea.View {
	var bottom []string
	cursorRow, cursorCol := -1, 0
	switch {
	case m.picker != nil:
		bottom = m.picker.view(m.pal, m.width, m.height)
	case m.ask != nil:
		bottom = m.askView()
	default:
		if m.running {
			bottom = append(bottom, m.status())
		}
		prompt := promptIdle
		if m.running {
			prompt = promptRunning
		}
		lines, row, col := m.ed.render(prompt, m.width)
		cursorRow, cursorCol = len(bottom)+row, col
		bottom = append(bottom, lines...)
		if m.hint != "" {
			bottom = append(bottom, m.pal.Render(styleFaint, ansi.Truncate(m.hint, m.width, "…")))
		}
	}
	var top []string
	if strings.TrimSpace(m.answer) != "" {
		if m.printed {
			top = append(top, "") // as the blank line it will be printed after
		}
		top = append(top, Markdown(m.pal, m.answer, m.width-1)...)
		room := max(m.height-len(bottom)-1, 0)
		if len(top) > room {
			top = top[len(top)-room:]
		}
	}
	lines := append(top, bottom...)
	if len(lines) > m.height {
		lines = lines[len(lines)-m.height:]
	}
	v := tea.NewView(strings.Join(lines, "\n"))
	if cursorRow >= 0 {
		v.Cursor = tea.NewCursor(cursorCol, len(top)+cursorRow-(len(top)+len(bottom)-len(lines)))
	}
	return v
}

func (m *model) status() string {
	el := time.Since(m.since).Truncate(time.Second)
	s := m.pal.Render(Style{Color: cyan}, spinner[m.frame%len(spinner)]) + " " + m.pal.Render(styleFaint, fmt.Sprintf("working %s · Ctrl-C stops", el))
	if m.notice != "" {
		s += "  " + m.pal.Render(Style{Color: yellow}, m.notice)
	}
	return ansi.Truncate(s, m.width, "…")
}

func (m *model) askView() []string {
	a := m.ask
	var out []string
	if a.YesNo {
		out = append(out, wrap(m.pal.Render(styleAsk, "? ")+a.Title, m.width, "", "  ")...)
		if a.Reason != "" {
			out = append(out, wrap(m.pal.Render(styleFaint, "("+a.Reason+")"), m.width, "  ", "  ")...)
		}
		return append(out, m.pal.Render(styleAsk, "answer: ")+"[y] yes  [n] no  [Esc] cancel")
	}
	out = append(out, wrap(m.pal.Render(styleAsk, "? ")+a.Title+" needs your approval", m.width, "", "  ")...)
	if a.Reason != "" {
		out = append(out, wrap(m.pal.Render(styleFaint, "("+a.Reason+")"), m.width, "  ", "  ")...)
	}
	diff := diffLines(m.pal, a.Diff, m.width)
	room := max(m.height/2, 3)
	if len(diff) > room {
		more := len(diff) - room + 1
		diff = append(diff[:room-1], m.pal.Render(styleFaint, fmt.Sprintf("  … %d more lines", more)))
	}
	out = append(out, diff...)
	out = append(out, m.pal.Render(styleAsk, "allow? ")+"[y] once  [a] for this session  [n] no")
	return out
}

func diffLines(p Palette, diff string, width int) []string {
	if diff == "" {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		st := Style{}
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			st = styleStrong
		case strings.HasPrefix(l, "+"):
			st = styleAdd
		case strings.HasPrefix(l, "-"):
			st = styleDel
		case strings.HasPrefix(l, "@@"):
			st = styleHunk
		}
		out = append(out, "  "+p.Render(st, ansi.Truncate(strings.ReplaceAll(l, "\t", "    "), width-2, "…")))
	}
	return out
}
