package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

type nopApp struct{}

func (nopApp) Submit(string)            {}
func (nopApp) Interrupt() bool          { return false }
func (nopApp) Exit()                    {}
func (nopApp) Commands() []string       { return nil }
func (nopApp) Search(string) []PickItem { return nil }
func (nopApp) Open(string)              {}

func TestRetryNoticeShowsBesideTheSpinnerUntilTheAnswerGoesOn(t *testing.T) {
	m := newModel(nopApp{}, Palette{})
	m.Update(Busy{On: true})
	m.Update(Notice{Text: "HTTP 500, retrying in 2 s, attempt 2 of 4"})
	if v := ansi.Strip(m.View().Content); !strings.Contains(v, "working") || !strings.Contains(v, "HTTP 500, retrying in 2 s, attempt 2 of 4") {
		t.Fatalf("the view:\n%s", v)
	}
	m.Update(Delta{Text: "Now it answers"})
	if v := ansi.Strip(m.View().Content); strings.Contains(v, "retrying") || !strings.Contains(v, "Now it answers") {
		t.Fatalf("the view after the answer went on:\n%s", v)
	}
}

func TestEscOrCtrlCPutsAYesNoQuestionAwayWithNeitherAnswer(t *testing.T) {
	for _, k := range []tea.KeyPressMsg{{Code: tea.KeyEscape}, {Code: 'c', Mod: tea.ModCtrl}} {
		m := newModel(nopApp{}, Palette{})
		var got []Decision
		m.Update(Ask{Title: "put the files back too?", YesNo: true, Answer: func(d Decision) { got = append(got, d) }})
		if v := ansi.Strip(m.View().Content); !strings.Contains(v, "[Esc] cancel") {
			t.Fatalf("the question does not say Esc cancels:\n%s", v)
		}
		m.Update(k)
		if len(got) != 1 || got[0] != Cancel {
			t.Fatalf("%s at a yes-or-no question answered %v, want [Cancel]", k, got)
		}
		if m.ask != nil {
			t.Fatalf("%s left the question up", k)
		}
	}
}

func TestEscDoesNotAnswerAnApproval(t *testing.T) {
	m := newModel(nopApp{}, Palette{})
	var got []Decision
	m.Update(Ask{Title: "bash ls", Answer: func(d Decision) { got = append(got, d) }})
	m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	if len(got) != 0 || m.ask == nil {
		t.Fatalf("Esc at an approval answered %v (still asking: %v)", got, m.ask != nil)
	}
}
