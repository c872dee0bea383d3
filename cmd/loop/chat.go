package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"golang.org/x/term"
)

const chatUsage = `Usage: loop chat [flags] [PROMPT...]

An interactive chat in the terminal; the words given, if any, are its first prompt
(loop "PROMPT" on a terminal is the same). The answer streams as it arrives, tool calls
show with their results, approvals are asked inline, and what you type while a run
is active waits in the queue. Ctrl-C stops the run (the partial answer is kept); at
an idle prompt a second Ctrl-C, or Ctrl-D, exits. /help lists the slash commands.
docs/cli.md has the details.

Flags:
`

func chatCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop chat", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	if code, done := parseFlags(fs, chatUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop chat", stderr)
	in, inOK := stdin.(*os.File)
	out, outOK := stdout.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return fail(usagef("stdin and stdout must be a terminal (loop run answers one prompt from a pipe)"))
	}
	if err := sf.check(); err != nil {
		return fail(err)
	}
	e, s, err := sf.open(stderr, host{command: "loop chat", permission: string(tools.PresetAsk)})
	if err != nil {
		return fail(err)
	}
	defer returnMemoryAfterRuns(e)()
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		_ = e.Shutdown(context.Background(), engine.Drain)
		return fail(fmt.Errorf("terminal: %w", err))
	}
	c := newChat(e, s, &sf, in, out)
	c.first = strings.Join(fs.Args(), " ")
	end := &ending{e: e, command: "loop chat", stderr: stderr, before: func() { _ = term.Restore(int(in.Fd()), state) }}
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
	return end.finish(engine.Drain, c.loop())
}

// chat is one terminal conversation. Keys come through chatInput to
// x/term's Terminal (line editing, history, paste); output goes through
// one printer goroutine to Terminal.Write, which keeps the line being
// typed below whatever streams.
type chat struct {
	e      *engine.Engine
	rt     *engine.Runtime
	sf     *sessionFlags
	in     *chatInput
	rw     io.ReadWriter
	t      *term.Terminal // replaced by resetTerminal, on the printer goroutine
	out    *printer
	resize func()
	first  string // the prompt given on the command line, sent first

	mu       sync.Mutex
	question *question
	running  bool            // a run of the current session is active
	typed    map[string]bool // prompts typed at an idle prompt: already on the screen
	timing   finishedRun     // the usage of the run whose timing finished last
	lineOpen bool            // printer only: the answer's last line is open
}

// finishedRun is a run's usage as its finished prompt timing carries it.
type finishedRun struct {
	runID string
	usage convo.UsageSum
}

// question is an approval waiting for its answer at the prompt.
type question struct {
	answers chan string
}

func newChat(e *engine.Engine, s *engine.Session, sf *sessionFlags, in, out *os.File) *chat {
	c := &chat{e: e, rt: e.NewRuntime(s), sf: sf, typed: map[string]bool{}}
	c.in = newChatInput(in, c.interrupt)
	c.rw = struct {
		io.Reader
		io.Writer
	}{c.in, out}
	c.t = term.NewTerminal(c.rw, promptIdle)
	c.t.SetBracketedPasteMode(true)
	c.resize = func() {
		// A terminal that reports no size keeps Terminal's 80 columns.
		if w, h, err := term.GetSize(int(out.Fd())); err == nil && w > 0 && h > 0 {
			_ = c.t.SetSize(w, h)
		}
	}
	c.resize()
	c.out = newPrinter()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for range winch {
			c.out.do(c.resize)
		}
	}()
	e.SetApprover(c)
	e.Subscribe(c.onEvent)
	return c
}

func (c *chat) session() *engine.Session { return c.rt.Session() }

// say prints a line of Loop's own (not the model's) above the prompt.
func (c *chat) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	c.out.do(func() {
		c.endLine()
		c.write(line + "\n")
	})
}

func (c *chat) write(s string) { _, _ = c.t.Write([]byte(s)) }

// endLine ends an open line of answer (printer only).
func (c *chat) endLine() {
	if c.lineOpen {
		c.write("\n")
		c.lineOpen = false
	}
}

// The prompts. None is empty: Terminal repaints its prompt (and the line
// being typed) after each write only when something is drawn there, so
// a non-empty prompt is what lets it follow the streaming answer and
// change when the state does.
const (
	promptIdle     = "> "
	promptRunning  = "… "
	promptApproval = "allow? [y/a/n] "
)

// setPrompt shows the prompt for the current state.
func (c *chat) setPrompt() {
	c.mu.Lock()
	p := promptIdle
	switch {
	case c.question != nil:
		p = promptApproval
	case c.running:
		p = promptRunning
	}
	c.mu.Unlock()
	c.out.do(func() {
		c.t.SetPrompt(p)
		c.write("") // repaints the prompt line
	})
}

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

func (c *chat) loop() int {
	s := c.session()
	snap := s.Snapshot()
	c.say("loop chat: session %s in %s, model %s, %s. /help lists commands; Ctrl-D exits.", s.ID(), s.Cwd(), modelName(snap), snap.State.PermissionPreset)
	c.say("  %s", c.sandboxLine(s))
	if strings.TrimSpace(c.first) != "" {
		c.say("%s%s", promptIdle, c.first)
		c.submit(c.first)
	}
	var pasted strings.Builder
	for {
		line, err := c.t.ReadLine()
		if errors.Is(err, term.ErrPasteIndicator) {
			// A pasted line: the prompt is all of the paste, sent with the
			// line typed after it.
			pasted.WriteString(line + "\n")
			continue
		}
		if errors.Is(err, io.EOF) {
			// Ctrl-D on an empty line, or a second Ctrl-C at an idle prompt.
			if c.in.closed() || c.tryExit() {
				c.out.close()
				return exitOK
			}
			c.resetTerminal()
			continue
		}
		if err != nil {
			c.out.close()
			return exitRunError
		}
		c.mu.Lock()
		q := c.question
		c.mu.Unlock()
		text := pasted.String() + line
		pasted.Reset()
		if q != nil {
			q.answers <- line
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(text, "/") && !strings.Contains(text, "\n") {
			if c.command(text) {
				c.out.close()
				return exitOK
			}
			continue
		}
		c.submit(text)
	}
}

// resetTerminal replaces the Terminal after ReadLine returned io.EOF: it
// keeps the key that ended the line unread and would return io.EOF again
// at once. History carries over.
func (c *chat) resetTerminal() {
	done := make(chan struct{})
	c.out.do(func() {
		old := c.t
		// The old prompt stays on its line: erase it, the new one goes there.
		_, _ = c.rw.Write([]byte("\r\x1b[K"))
		c.t = term.NewTerminal(c.rw, promptIdle)
		c.t.History = old.History
		c.t.SetBracketedPasteMode(true)
		c.resize()
		close(done)
	})
	<-done
	c.setPrompt()
}

// interrupt is Ctrl-C, seen as it is typed (it never reaches Terminal,
// which would end the chat). During a run (or a compaction) it stops the
// run, keeping the partial answer; at an idle prompt it clears the line,
// and a second one there in a row exits. It returns the keys Terminal
// gets instead, and whether this was a Ctrl-C at an idle prompt.
func (c *chat) interrupt(again bool) ([]byte, bool) {
	s := c.session()
	if s.Snapshot().Operation != engine.OpIdle {
		s.RequestAbort()
		return nil, false
	}
	if again {
		return []byte{ctrlE, ctrlU, ctrlD}, true // an empty line, then Ctrl-D: exit
	}
	c.say("(Ctrl-C again or Ctrl-D exits)")
	return []byte{ctrlE, ctrlU}, true
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
	c.out.do(func() { c.endLine() })
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
	if running {
		// Enter moved the cursor to a new line: the answer goes on there.
		c.out.do(func() { c.lineOpen = false })
	}
	res, err := c.session().Prompt(engine.PromptInput{RequestID: id, Text: text})
	if err != nil {
		c.say("  not sent: %s: %v", engine.CodeOf(err), err)
		return
	}
	if res.Queued {
		c.say("  (queued: %s)", cut(firstLine(text, 60), 60))
	}
}

// Ask is the engine's approval request, answered at the prompt.
func (c *chat) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	q := &question{answers: make(chan string, 1)}
	c.mu.Lock()
	c.question = q
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.question = nil
		c.mu.Unlock()
		c.setPrompt()
	}()
	c.say("  ? %s needs your approval: [y] once, [a] for this session, [n] no", toolSummary(req.Tool.Name, req.Tool.Input))
	if req.Reason != "" {
		c.say("    (%s)", req.Reason)
	}
	c.setPrompt()
	for {
		select {
		case a := <-q.answers:
			switch strings.ToLower(strings.TrimSpace(a)) {
			case "y", "yes":
				return engine.DecisionAllowedOnce, nil
			case "a", "always":
				return engine.DecisionAllowedSession, nil
			case "n", "no":
				return engine.DecisionRejected, nil
			}
			c.say("  answer y (once), a (for this session) or n (no)")
		case <-ctx.Done():
			c.say("  (the approval was withdrawn)")
			return "", ctx.Err()
		}
	}
}

// onEvent shows the current session's events, in order, on the printer.
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
			c.setPrompt()
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
	case *engine.ToolEvent:
		switch {
		case p.Event == "start":
			line := "  · " + toolSummary(p.Name, p.Input)
			c.out.do(func() { c.endLine(); c.write(line + "\n") })
		case p.Event == "end":
			mark, text := "✓", blocksText(p.Result)
			if p.IsError {
				mark = "✗"
			}
			line := fmt.Sprintf("    %s %s", mark, resultSummary(text))
			c.out.do(func() { c.write(line + "\n") })
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
		default:
			c.out.do(func() { c.endLine() })
		}
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
		c.setPrompt()
	}
}

func (c *chat) onMessage(p *engine.MessageEvent) {
	switch {
	case p.Event == "delta" && p.Type == "text" && p.Delta != "":
		d := p.Delta
		c.out.do(func() {
			c.write(d)
			c.lineOpen = !strings.HasSuffix(d, "\n")
		})
	case p.Event == "end" && p.Message != nil && p.Message.Role == convo.RoleAssistant:
		c.out.do(func() { c.endLine() })
	case p.Event == "end" && p.Message != nil && p.Message.Role == convo.RoleUser:
		c.mu.Lock()
		typed := c.typed[p.Message.RequestID]
		delete(c.typed, p.Message.RequestID)
		c.mu.Unlock()
		if !typed {
			// A queued input starts: show it where its answer begins.
			text := "> " + firstLine(p.Message.Text(), 200)
			c.out.do(func() { c.endLine(); c.write(text + "\n") })
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

// printer runs output jobs one at a time, in order, off the engine's
// goroutines (subscribers must not block).
type printer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	jobs   []func()
	closed bool
	done   chan struct{}
}

func newPrinter() *printer {
	p := &printer{done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		defer close(p.done)
		for {
			p.mu.Lock()
			for len(p.jobs) == 0 && !p.closed {
				p.cond.Wait()
			}
			if len(p.jobs) == 0 {
				p.mu.Unlock()
				return
			}
			jobs := p.jobs
			p.jobs = nil
			p.mu.Unlock()
			for _, j := range jobs {
				j()
			}
		}
	}()
	return p
}

func (p *printer) do(job func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.jobs = append(p.jobs, job)
		p.cond.Signal()
	}
}

// close runs what is queued and stops.
func (p *printer) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Signal()
	p.mu.Unlock()
	<-p.done
}

// Control keys chatInput hands Terminal in place of Ctrl-C.
const (
	ctrlD = 4
	ctrlE = 5  // end of line
	ctrlU = 21 // erase to the start of the line
)

// chatInput feeds the keys typed to Terminal. It takes Ctrl-C out of the
// stream and hands it to the chat the moment it is typed, so a run stops
// at once, even while Terminal waits for a line.
type chatInput struct {
	keys    chan []byte // from the reader goroutine; closed at EOF
	pending []byte
	eof     atomic.Bool
}

func newChatInput(f *os.File, onCtrlC func(again bool) ([]byte, bool)) *chatInput {
	in := &chatInput{keys: make(chan []byte)}
	go func() {
		defer close(in.keys)
		buf := make([]byte, 4096)
		again := false
		for {
			n, err := f.Read(buf)
			var b []byte
			for _, k := range buf[:n] {
				if k != 3 {
					b = append(b, k)
					again = false
					continue
				}
				keys, idle := onCtrlC(again)
				b = append(b, keys...)
				again = idle
			}
			if len(b) > 0 {
				in.keys <- b
			}
			if err != nil {
				in.eof.Store(true)
				return
			}
		}
	}()
	return in
}

func (in *chatInput) Read(p []byte) (int, error) {
	if len(in.pending) == 0 {
		b, ok := <-in.keys
		if !ok {
			return 0, io.EOF
		}
		in.pending = b
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// closed reports that the terminal's input ended.
func (in *chatInput) closed() bool { return in.eof.Load() }
