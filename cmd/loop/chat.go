package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/internal/tui"
	"golang.org/x/term"
)

const chatUsage = `Usage: loop chat [flags] [PROMPT...]

An interactive chat in the terminal. Answers stream as Markdown, rendered; tool
calls show folded; approvals take one key (y, a, n) and show a write's or an
edit's diff; what you type during a run waits in the queue. -r picks a session
to open (type to search). The words given, if any, are a first prompt (loop
"PROMPT" on a terminal is the same). Ctrl-C stops the run (the partial answer
is kept); at an idle prompt a second Ctrl-C, or Ctrl-D, exits. /help lists the
slash commands. docs/cli.md has the details.

Flags:
`

func chatCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop chat", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	var pick bool
	fs.BoolVar(&pick, "resume", false, "pick a session to open: title, age, messages, workspace; type to search")
	fs.BoolVar(&pick, "r", false, "short for --resume")
	color := fs.String("color", "auto", "colour: auto (the terminal's, off under NO_COLOR), always or never")
	if code, done := parseFlags(fs, chatUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop chat", stderr)
	mode := tui.ColorMode(*color)
	if mode != tui.ColorAuto && mode != tui.ColorAlways && mode != tui.ColorNever {
		return fail(usagef("--color %q is not auto, always or never", *color))
	}
	in, inOK := stdin.(*os.File)
	out, outOK := stdout.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return fail(usagef("stdin and stdout must be a terminal (loop run answers one prompt from a pipe)"))
	}
	if err := sf.check(); err != nil {
		return fail(err)
	}
	if pick && (sf.cont || sf.session != "" || sf.fork != "" || sf.noSession) {
		return fail(usagef("--resume picks the session: it excludes --continue, --session, --fork and --no-session"))
	}
	e, s, err := sf.open(stderr, host{command: "loop chat", permission: string(tools.PresetAsk)})
	if err != nil {
		return fail(err)
	}
	defer returnMemoryAfterRuns(e)()
	env := os.Environ()
	c := newChat(e, s, &sf, in, out, tui.UsesColor(mode, env), env)
	end := &ending{e: e, command: "loop chat", stderr: stderr, before: c.ui.Kill}
	// Ctrl-C is a key in raw mode; these come from elsewhere (kill, a
	// closed terminal). Stop the run, save, and leave the terminal usable.
	// They stay caught until the process exits: a closed terminal both
	// ends the input and sends SIGHUP, and whichever comes first, the
	// other must not end the process while an unsaved result is being
	// written to its recovery file.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, endSignals...)
	go func() {
		sig := <-sigs
		os.Exit(end.finish(engine.Abort, signalStatus(sig)))
	}()
	return end.finish(engine.Drain, c.run(pick, strings.Join(fs.Args(), " ")))
}

// chat is one terminal conversation: the engine's side. What the person
// sees and types is the UI's (internal/tui); the UI hands what they do
// to chat (it is the tui.App), which acts on one goroutine, in order.
type chat struct {
	e   *engine.Engine
	rt  *engine.Runtime
	sf  *sessionFlags
	ui  *tui.Program
	act chan func() bool // what the person did; true ends the chat

	mu       sync.Mutex
	question *question
	running  bool            // a run of the current session is active
	typed    map[string]bool // prompts typed at an idle prompt: already on the screen
	timing   finishedRun     // the usage of the run whose timing finished last
}

// finishedRun is a run's usage as its finished prompt timing carries it.
type finishedRun struct {
	runID string
	usage convo.UsageSum
}

// question is an approval waiting for its answer.
type question struct {
	answers chan tui.Decision
}

func newChat(e *engine.Engine, s *engine.Session, sf *sessionFlags, in, out *os.File, color bool, env []string) *chat {
	c := &chat{e: e, rt: e.NewRuntime(s), sf: sf, typed: map[string]bool{}, act: make(chan func() bool, 1024)}
	c.ui = tui.New(c, in, out, color, env)
	e.SetApprover(c)
	e.Subscribe(c.onEvent)
	return c
}

func (c *chat) session() *engine.Session { return c.rt.Session() }

// say prints a line of Loop's own (not the model's) above the input.
func (c *chat) say(format string, args ...any) {
	c.ui.Send(tui.Say{Text: fmt.Sprintf(format, args...)})
}

// do queues an action for the chat's goroutine; it never blocks the UI.
func (c *chat) do(f func() bool) {
	select {
	case c.act <- f:
	default:
		go func() { c.act <- f }()
	}
}

// The tui.App: what the person does.

func (c *chat) Submit(text string) {
	c.do(func() bool {
		if strings.HasPrefix(text, "/") && !strings.Contains(text, "\n") {
			return c.command(text)
		}
		c.submit(text)
		return false
	})
}

func (c *chat) Exit() { c.do(c.tryExit) }

func (c *chat) Open(id string) { c.do(func() bool { c.open(id); return false }) }

// Interrupt is Ctrl-C: during a run (or a compaction) it stops it at
// once, keeping the partial answer.
func (c *chat) Interrupt() bool {
	s := c.session()
	if s.Snapshot().Operation == engine.OpIdle {
		return false
	}
	s.RequestAbort()
	return true
}

func (c *chat) Commands() []string { return chatCommandNames() }

// sandboxLine says where the session's bash commands run: in which OS
// sandbox and what it allows, or why there is none and what that means
// (docs/cli.md, "Permission presets").
func (c *chat) sandboxLine(s *engine.Session) string {
	if sum := s.SandboxSummary(); sum != "" {
		return "bash and MCP stdio servers run in the " + sum
	}
	preset := s.Snapshot().State.PermissionPreset
	st := c.e.Sandbox()
	switch {
	case preset == string(tools.PresetFullAccess):
		return "bash and MCP stdio servers run without a sandbox (full-access)"
	case !st.Available && preset == string(tools.PresetWorkspaceWrite):
		return "the OS sandbox is " + st.String() + "; bash asks before each command"
	case !st.Available && (preset == string(tools.PresetReadOnly) || preset == ""):
		return "the OS sandbox is " + st.String() + "; bash is denied (read-only runs it only in the sandbox: switch to workspace-write, ask or full-access), MCP stdio servers run without one"
	}
	return "the OS sandbox is " + st.String() + "; bash and MCP stdio servers run without one"
}

// run shows the UI until the person leaves: pick opens the session
// picker first, and first is a prompt to send at once.
func (c *chat) run(pick bool, first string) int {
	s := c.session()
	snap := s.Snapshot()
	c.say("loop chat: session %s in %s, model %s, %s. /help lists commands; Ctrl-D exits.", s.ID(), s.Cwd(), modelName(snap), snap.State.PermissionPreset)
	c.say("  %s", c.sandboxLine(s))
	c.showHistory(s)
	if pick {
		c.pick()
	}
	if strings.TrimSpace(first) != "" {
		c.ui.Send(tui.UserLine{Text: first})
		c.Submit(first)
	}
	code := make(chan int, 1)
	go func() {
		for {
			select {
			case f := <-c.act:
				if f() {
					c.ui.Send(tui.Quit{})
					code <- exitOK
					return
				}
			case <-c.ui.InputEnded():
				// The terminal went away: leave; whatever is unsaved is
				// retried and else written to a recovery file.
				c.ui.Send(tui.Quit{})
				code <- exitOK
				return
			}
		}
	}()
	if err := c.ui.Run(); err != nil {
		select {
		case <-c.ui.InputEnded():
			return exitOK
		default:
		}
		return exitRunError
	}
	select {
	case n := <-code:
		return n
	default:
		return exitOK
	}
}

// tryExit leaves unless a save is pending or a run is active.
func (c *chat) tryExit() bool {
	snap := c.session().Snapshot()
	switch {
	case snap.State.HasPendingSave:
		c.say("The last result is not saved yet, so loop chat does not exit. Repair the problem, then type /flush.")
		return false
	case snap.Operation != engine.OpIdle:
		c.say("A run is active: Ctrl-C stops it first.")
		return false
	}
	return true
}

// submit sends a prompt; during a run it joins the queue.
func (c *chat) submit(text string) {
	if !c.pickUp() { // what another process said meanwhile (chat_shared.go)
		return
	}
	id := "chat-" + uuid.Must(uuid.NewV7()).String()
	c.mu.Lock()
	running := c.running
	if !running {
		c.typed[id] = true
	}
	c.mu.Unlock()
	res, err := c.session().Prompt(engine.PromptInput{RequestID: id, Text: text})
	if err != nil {
		c.say("  not sent: %s: %v", engine.CodeOf(err), err)
		return
	}
	if res.Queued {
		c.say("  (queued: %s)", cut(firstLine(text, 60), 60))
	}
}

// Ask is the engine's approval request: one key answers it, and a write
// or an edit shows the diff of what it would change.
func (c *chat) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	q := &question{answers: make(chan tui.Decision, 1)}
	c.mu.Lock()
	c.question = q
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.question = nil
		c.mu.Unlock()
	}()
	c.ui.Send(tui.Ask{
		Title:  toolSummary(req.Tool.Name, req.Tool.Input),
		Reason: req.Reason,
		Diff:   tools.PreviewDiff(c.session().Cwd(), req.Tool.Name, req.Tool.Input),
		Answer: func(d tui.Decision) { q.answers <- d },
	})
	select {
	case d := <-q.answers:
		switch d {
		case tui.AllowOnce:
			return engine.DecisionAllowedOnce, nil
		case tui.AllowSession:
			return engine.DecisionAllowedSession, nil
		}
		return engine.DecisionRejected, nil
	case <-ctx.Done():
		c.ui.Send(tui.Withdraw{})
		return "", ctx.Err()
	}
}

// onEvent shows the current session's events, in order, through the UI.
func (c *chat) onEvent(ev engine.Event) {
	if ev.SessionID != c.session().ID() {
		return
	}
	switch p := ev.Payload.(type) {
	case *engine.RunAcceptedEvent:
		if p.SteeredInto == "" {
			c.mu.Lock()
			c.running = true
			c.mu.Unlock()
			c.ui.Send(tui.Busy{On: true})
		}
	case *engine.PromptTimingEvent:
		// It comes before the run's settled event, which shows it.
		if p.Event == "finish" {
			c.mu.Lock()
			c.timing = finishedRun{runID: p.Timing.ID, usage: p.Timing.Usage}
			c.mu.Unlock()
		}
	case *engine.MessageEvent:
		c.onMessage(p)
	case *engine.RetryEvent:
		// Beside the spinner until the answer goes on (progress.go words it).
		c.ui.Send(tui.Notice{Text: retryText(p)})
	case *engine.ToolEvent:
		switch {
		case p.Event == "start":
			c.ui.Send(tui.ToolStart{Line: toolSummary(p.Name, p.Input)})
		case p.Event == "end":
			c.ui.Send(tui.ToolEnd{OK: !p.IsError, Line: resultSummary(blocksText(p.Result))})
		}
	case *engine.AgentSettledEvent:
		if p.SteeredInto != "" {
			return
		}
		switch p.Outcome {
		case engine.OutcomeError:
			switch {
			case p.Error == nil:
			case p.Error.Code == engine.CodeStorageError:
				c.say("  not saved: %s. Repair the problem, then /flush.", p.Error.Message)
			case p.Error.Code == engine.CodeBudgetExceeded:
				c.say("  error: %s: %s; /budget shows the limits", p.Error.Code, p.Error.Message)
			default:
				c.say("  error: %s: %s", p.Error.Code, p.Error.Message)
			}
		case engine.OutcomeCancelled:
			c.say("  (stopped; the partial answer is kept. /resume continues, /queue shows what waits)")
		}
		c.ui.Send(tui.AnswerEnd{})
		c.mu.Lock()
		c.running = false
		var line string
		if c.timing.runID == p.RunID {
			line = promptUsageLine(c.timing.usage)
		}
		c.mu.Unlock()
		if line != "" {
			c.say("%s", line)
		}
		c.ui.Send(tui.Busy{On: false})
	}
}

func (c *chat) onMessage(p *engine.MessageEvent) {
	switch {
	case p.Event == "delta" && p.Type == "text" && p.Delta != "":
		c.ui.Send(tui.Delta{Text: p.Delta})
	case p.Event == "end" && p.Message != nil && p.Message.Role == convo.RoleAssistant:
		c.ui.Send(tui.AnswerEnd{})
	case p.Event == "end" && p.Message != nil && p.Message.Role == convo.RoleUser:
		c.mu.Lock()
		typed := c.typed[p.Message.RequestID]
		delete(c.typed, p.Message.RequestID)
		c.mu.Unlock()
		if !typed {
			// A queued input starts: show it where its answer begins.
			c.ui.Send(tui.UserLine{Text: firstLine(p.Message.Text(), 200)})
		}
	}
}

// resultSummary is a tool result in one short line: its first line and
// how many more there are.
func resultSummary(text string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return "(no output)"
	}
	lines := strings.Count(text, "\n")
	s := firstLine(text, 100)
	if lines > 0 {
		s += fmt.Sprintf(" (+%d lines)", lines)
	}
	return s
}

func modelName(snap *engine.Snapshot) string {
	if snap.Model == nil {
		return "(none)"
	}
	name := snap.Model.Provider + "/" + snap.Model.ID
	if snap.Effort != "" && snap.Effort != engine.EffortDefault {
		name += " (" + snap.Effort + ")"
	}
	return name
}
