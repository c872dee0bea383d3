package tui

import (
	"strings"
	"testing"

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
