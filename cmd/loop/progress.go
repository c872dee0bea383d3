package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tui"
	"github.com/loopdev/loop/rpc"
)

// progress is what loop run says on stderr about its work besides the
// tool lines (docs/cli.md, "Progress"): a status while the model is asked
// (waiting, thinking) and each retry of a model request. On a terminal
// the status is one line rewritten in place and cleared before anything
// else is written; with --verbose and no terminal each status is a line
// of its own; otherwise nothing, so that what a script reads on stderr
// stays as it was. --quiet silences it, and the tool lines too. Its
// methods return what to write; printRun writes it, under its lock, in
// order with the answer (the outbox).
type progress struct {
	level progressLevel
	tty   bool   // stderr is a terminal
	shown string // the status on the terminal now, "" when none
	said  string // the status last said as a line (no terminal), "" after anything else
	color bool   // stderr's lines are coloured (--color, NO_COLOR)
}

type progressLevel int

const (
	progressQuiet progressLevel = iota
	progressNormal
	progressVerbose
)

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// SGR colours of stderr's lines: statuses and tool lines faint, retries
// yellow.
const (
	faint    = "\x1b[2m"
	yellow   = "\x1b[33m"
	sgrReset = "\x1b[0m"
)

func newProgress(k *runKnobs, stderrTTY bool, env []string) *progress {
	mode := tui.ColorMode(k.color)
	g := &progress{level: progressNormal, tty: stderrTTY,
		color: mode == tui.ColorAlways || stderrTTY && tui.UsesColor(mode, env)}
	switch {
	case k.quiet:
		g.level = progressQuiet
	case k.verbose:
		g.level = progressVerbose
	}
	return g
}

// paint is text in the SGR colour sgr when stderr is coloured.
func (g *progress) paint(sgr, text string) string {
	if !g.color {
		return text
	}
	return sgr + text + sgrReset
}

// on says whether statuses and retries are told at all.
func (g *progress) on() bool {
	return g.level == progressVerbose || g.level == progressNormal && g.tty
}

// tools says whether tool calls get their lines.
func (g *progress) tools() bool { return g.level != progressQuiet }

// verbose says whether the details --verbose adds are told.
func (g *progress) verbose() bool { return g.level == progressVerbose }

// status is what shows text as the current status.
func (g *progress) status(text string) string {
	if !g.on() {
		return ""
	}
	if g.tty {
		if g.shown == text {
			return ""
		}
		g.shown = text
		return clearLine + g.paint(faint, text)
	}
	if g.said == text {
		return ""
	}
	g.said = text
	return g.paint(faint, "loop run: "+text) + "\n"
}

// clear is what removes the status before anything else is written.
func (g *progress) clear() string {
	g.said = ""
	if g.shown == "" {
		return ""
	}
	g.shown = ""
	return clearLine
}

// line is a line that stays (a retry), after the status is cleared.
func (g *progress) line(text string) string {
	if !g.on() {
		return ""
	}
	return g.clear() + g.paint(yellow, "loop run: "+text) + "\n"
}

// retryText is a RetryEvent for a person: "HTTP 500, retrying in 2 s,
// attempt 2 of 4".
func retryText(r *engine.RetryEvent) string {
	why := "the request failed"
	if r.Status != 0 {
		why = "HTTP " + strconv.Itoa(r.Status)
	} else if r.Message != "" {
		why = firstLine(r.Message, 100)
	}
	return fmt.Sprintf("%s, retrying in %s, attempt %d of %d", why, seconds(r.Delay), r.Attempt, r.Of)
}

// seconds is d as a person reads a short wait: "2 s", "1.5 s", "250 ms".
func seconds(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// usageText is a run's usage in one line (--verbose, at the end).
func usageText(u *rpc.UsageTotals) string {
	s := fmt.Sprintf("%d model calls, %d tokens in (%d cached), %d out", u.Calls, u.Input+u.CacheRead+u.CacheWrite, u.CacheRead, u.Output)
	if u.Cost != nil {
		s += fmt.Sprintf(", cost %.4f", *u.Cost)
	}
	return s
}

// say writes s on stderr, in order with the answer.
func (p *printRun) say(s string) {
	if s != "" {
		p.out.err(s)
	}
}

// beforeOut clears the status before the answer is written to the
// terminal it shares (the status would sit in the middle of it).
func (p *printRun) beforeOut() {
	if p.stdoutTTY {
		p.say(p.progress.clear())
	}
}

// showStatus shows a status, on a line of its own: an answer still
// open on the terminal is ended first.
func (p *printRun) showStatus(text string) {
	s := p.progress.status(text)
	if s == "" {
		return
	}
	if p.stdoutTTY && p.lineOpen {
		p.out.out("\n")
		p.lineOpen = false
	}
	p.say(s)
}

// follow tells the run's progress from its events (p.mu held).
func (p *printRun) follow(ev engine.Event) {
	model := "the model"
	if p.model != "" {
		model = p.model
	}
	switch pl := ev.Payload.(type) {
	case *engine.PromptTimingEvent:
		if pl.Event == "start" && pl.Timing.ID == p.runID {
			p.showStatus("waiting for " + model + "…")
		}
	case *engine.MessageEvent:
		if pl.RunID != p.runID || pl.Event != "delta" {
			return
		}
		switch {
		case pl.Type == "thinking":
			p.showStatus(model + " is thinking…")
		case !p.stdoutTTY:
			p.showStatus(model + " is answering…")
		}
	case *engine.ToolEvent:
		if pl.RunID != p.runID {
			return
		}
		if pl.Event == "start" {
			if pl.AwaitsApproval {
				// The question goes to the terminal: nothing may sit
				// on its line.
				p.say(p.progress.clear())
			} else if p.format != "text" {
				// (text has said it in the tool's line)
				p.showStatus("running " + pl.Name + "…")
			}
		}
		if pl.Event != "end" {
			return
		}
		if p.progress.verbose() && !pl.IsError && p.format == "text" {
			p.toolLine("tool: " + pl.Name + " done")
		}
		p.showStatus("waiting for " + model + "…")
	case *engine.RetryEvent:
		if pl.RunID != p.runID {
			return
		}
		if p.stdoutTTY && p.lineOpen {
			p.out.out("\n")
			p.lineOpen = false
		}
		p.say(p.progress.line(retryText(pl)))
		p.showStatus(fmt.Sprintf("waiting for %s (attempt %d of %d)…", model, pl.Attempt, pl.Of))
	case *engine.AgentSettledEvent:
		if pl.RunID == p.runID {
			p.say(p.progress.clear())
		}
	}
}

// runModelName is the session's model as PROVIDER/ID, "" when it has none.
func runModelName(s *engine.Session) string {
	if m := s.Snapshot().Model; m != nil {
		return m.Provider + "/" + m.ID
	}
	return ""
}
