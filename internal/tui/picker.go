package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// picker chooses a session to open: typing searches (the chat's App
// runs the full-text search), arrows select, Enter opens, Esc leaves.
type picker struct {
	query string
	items []PickItem
	sel   int
	seq   int // the query the items are for
}

type pickResults struct {
	seq   int
	items []PickItem
}

func newPicker(items []PickItem) *picker { return &picker{items: items} }

func (m *model) pickerKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	switch k.String() {
	case "esc", "ctrl+c":
		m.picker = nil
	case "enter":
		if len(p.items) > 0 {
			id := p.items[p.sel].ID
			m.picker = nil
			m.app.Open(id)
		}
	case "up", "ctrl+p":
		p.sel = max(p.sel-1, 0)
	case "down", "ctrl+n":
		p.sel = min(p.sel+1, max(len(p.items)-1, 0))
	case "backspace", "ctrl+h":
		if p.query != "" {
			e := editor{text: p.query, cur: len(p.query)}
			e.backspace()
			p.query = e.text
			return m.pickerSearch()
		}
	case "ctrl+u":
		p.query = ""
		return m.pickerSearch()
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
			return m.pickerType(k.Text)
		}
	}
	return nil
}

func (m *model) pickerType(s string) tea.Cmd {
	m.picker.query += strings.ReplaceAll(s, "\n", " ")
	return m.pickerSearch()
}

// pickerSearch asks the App for the sessions that match the query, off
// the UI's goroutine; an answer to an older query is dropped.
func (m *model) pickerSearch() tea.Cmd {
	m.picker.seq++
	seq, q, app := m.picker.seq, strings.TrimSpace(m.picker.query), m.app
	return func() tea.Msg { return pickResults{seq: seq, items: app.Search(q)} }
}

func (p *picker) view(pal Palette, width, height int) []string {
	out := []string{
		pal.Render(styleHeading, "Resume a conversation") + pal.Render(styleFaint, "  type to search · ↑↓ select · Enter opens · Esc cancels"),
		"search: " + p.query,
	}
	rows := max(height-len(out)-1, 1)
	if len(p.items) == 0 {
		return append(out, pal.Render(styleFaint, "  (no sessions match)"))
	}
	first := 0
	if p.sel >= rows {
		first = p.sel - rows + 1
	}
	now := time.Now()
	for i := first; i < len(p.items) && i < first+rows; i++ {
		it := p.items[i]
		title := firstLineOf(it.Title)
		if title == "" {
			title = "(untitled)"
		}
		meta := fmt.Sprintf("  %s · %d messages", age(now, it.Updated), it.Messages)
		if it.Workspace != "" {
			meta += " · " + it.Workspace
		}
		if it.Snippet != "" {
			meta += " · " + firstLineOf(it.Snippet)
		}
		line := ansi.Truncate(title, max(width/2, 20), "…")
		line = ansi.Truncate(line+pal.Render(styleFaint, meta), width-2, "…")
		if i == p.sel {
			out = append(out, pal.Render(styleSelect, "> ")+line)
		} else {
			out = append(out, "  "+line)
		}
	}
	return out
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// age is how long ago t was, in the largest unit that fits.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "?"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	case d < 60*24*time.Hour:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
	return t.Format("2006-01-02")
}
