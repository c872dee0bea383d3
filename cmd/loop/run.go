package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

const runUsage = `Usage: loop run [flags] [PROMPT...]

Runs one prompt without the protocol ("print mode") and exits. The prompt is the
arguments joined by spaces, else all of stdin; given both, stdin is attached as a
text file named stdin. Flags may follow the prompt; -- ends them.

  echo "What does this repository do?" | loop run
  git diff | loop run "review this"
  loop run --output json -c "and the tests?"

Exit status: 0 completed; 1 the run ended with an error; 2 bad usage or
configuration, found before anything runs; 3 the result could not be saved (the
recovery file is named on stderr); 128+N interrupted by signal N, 130 for SIGINT
(the partial answer is kept). docs/cli.md has the details.

Flags:
`

// Exit statuses of loop run (docs/cli.md "Exit status").
const (
	exitOK          = 0
	exitRunError    = 1
	exitUsage       = 2
	exitUnsaved     = 3
	exitInterrupted = 130 // 128 + SIGINT; other signals: signalStatus
)

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop run", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	output := fs.String("output", "text", "what stdout carries: text (the answer), json (one object at the end) or stream-json (each notification, then the result)")
	var knobs runKnobs
	knobs.register(fs)
	if code, done := parseFlags(fs, runUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop run", stderr)
	switch *output {
	case "text", "json", "stream-json":
	default:
		return fail(usagef("--output must be text, json or stream-json, not %q", *output))
	}
	if err := sf.check(); err != nil {
		return fail(err)
	}
	if err := knobs.check(); err != nil {
		return fail(err)
	}
	in, err := readPrompt(fs.Args(), stdin)
	if err == nil {
		err = knobs.attach(&in)
	}
	if err != nil {
		return fail(err)
	}
	// A run makes no background title: it would be a model call that the
	// exit cuts off (docs/cli.md).
	e, s, err := sf.open(stderr, host{command: "loop run", noBackgroundTitles: true, check: knobs.precheck(&sf)})
	if err != nil {
		return fail(err)
	}
	if err := knobs.apply(s); err != nil {
		_ = e.Shutdown(context.Background(), engine.Drain)
		return fail(err)
	}
	tty := openTerminal()
	defer tty.close()
	p := &printRun{
		e: e, s: s, in: in, format: *output, tty: tty,
		out: newOutbox(stdout, stderr), stdoutTTY: isTerminal(stdout),
		settledCh: make(chan struct{}),
		progress:  newProgress(&knobs, isTerminal(stderr), os.Environ()), model: runModelName(s),
	}
	return p.run()
}

// readPrompt builds the submission from the arguments and stdin.
func readPrompt(args []string, stdin io.Reader) (engine.PromptInput, error) {
	in := engine.PromptInput{RequestID: "cli-" + uuid.Must(uuid.NewV7()).String(), Text: strings.Join(args, " ")}
	piped := stdin != nil && !isTerminal(stdin)
	var data []byte
	if piped {
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return in, usagef("read stdin: %v", err)
		}
	}
	switch {
	case len(args) > 0 && len(data) > 0:
		in.Files = []engine.File{{Name: "stdin", Text: string(data)}}
		if !utf8.Valid(data) {
			return in, usagef("invalid_text_files: stdin is not UTF-8 text, so it cannot be attached")
		}
	case len(args) > 0:
	case piped:
		in.Text = string(data)
	default:
		return in, usagef("no prompt: give it as arguments or on stdin (see loop run -h)")
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Files) == 0 {
		return in, usagef("the prompt is empty")
	}
	if err := engine.ValidatePrompt(in); err != nil {
		return in, classify(err)
	}
	return in, nil
}

// printRun is one prompt of print mode: it submits, follows the run's
// events onto stdout and stderr, and settles the save.
type printRun struct {
	e         *engine.Engine
	s         *engine.Session
	in        engine.PromptInput
	format    string
	tty       *terminal
	out       *outbox
	stdoutTTY bool
	// progress is what stderr says besides tool lines (progress.go);
	// model names the session's model there.
	progress *progress
	model    string

	mu        sync.Mutex
	closed    bool
	runID     string
	settled   *engine.AgentSettledEvent
	settledCh chan struct{}
	answer    strings.Builder
	curMsg    string // the message whose text streams now
	streamed  bool
	lineOpen  bool // the answer on stdout does not end in a newline
	// usage is the run's as its prompt timing carries it: every model
	// call of the run (replies, retried attempts, automatic compaction).
	usage rpc.UsageTotals
}

// runResult is --output json's object and stream-json's last line.
type runResult struct {
	SessionID string          `json:"sessionId"`
	RunID     *string         `json:"runId"`
	Outcome   string          `json:"outcome"`
	Text      string          `json:"text"`
	Error     *resultError    `json:"error"`
	Usage     rpc.UsageTotals `json:"usage"`
	// Recovered is the run of an earlier process that opening the session
	// saved as interrupted (docs/protocol.md 9.1); absent when none.
	Recovered *recoveredResult `json:"recovered,omitempty"`
}

// recoveredResult is runResult's recovered member.
type recoveredResult struct {
	RunID         string `json:"runId"`
	RequestID     string `json:"requestId,omitempty"`
	Outcome       string `json:"outcome"`
	Messages      int    `json:"messages"`
	InterruptedAt int64  `json:"interruptedAt"`
}

// recoveredOf is the run s's open recovered, as runResult reports it.
func recoveredOf(s *engine.Session) *recoveredResult {
	rec := s.RecoveredOnOpen()
	if rec == nil {
		return nil
	}
	return &recoveredResult{RunID: rec.RunID, RequestID: rec.RequestID, Outcome: engine.OutcomeInterrupted,
		Messages: rec.Messages, InterruptedAt: rec.InterruptedAt}
}

type resultError struct {
	Code    engine.Code `json:"code"`
	Message string      `json:"message"`
}

func (p *printRun) run() int {
	// A reader that goes away must not kill the process before the
	// session is saved: writes to a closed pipe fail instead.
	signal.Ignore(syscall.SIGPIPE)
	// Every signal that would end the process stays caught until the
	// result is saved or in its recovery file (Shutdown, below).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, endSignals...)
	defer signal.Stop(sigs)

	unsubscribe := p.e.Subscribe(p.onEvent)
	p.e.SetApprover(&printApprover{tty: p.tty, out: p.out})
	res, err := p.s.Prompt(p.in)
	if err != nil {
		unsubscribe()
		return p.refused(err)
	}
	p.mu.Lock()
	if p.runID == "" {
		p.runID = res.RunID
	}
	p.mu.Unlock()

	var sig os.Signal
	select {
	case <-p.settledCh:
	case sig = <-sigs:
		p.out.err("loop run: interrupted; stopping the run (the partial answer is kept)\n")
		aborted := make(chan struct{})
		go func() {
			_, _ = p.s.Abort(context.Background())
			close(aborted)
		}()
		select {
		case <-aborted:
		case <-sigs:
			// A second signal leaves at once, unsaved.
			p.out.close()
			return signalStatus(sig)
		}
		<-p.settledCh
	}
	// The run's last events (state, list) are written before the result.
	_ = p.s.Wait(context.Background())
	unsubscribe()
	p.mu.Lock()
	p.closed = true
	if p.format == "text" && p.lineOpen {
		p.out.out("\n")
	}
	settled := p.settled
	p.mu.Unlock()
	// A save that failed is told once, below: by the wait for /flush,
	// else by the line naming the recovery file.
	if own := ownError(settled.Error, p.s.Snapshot().State.HasPendingSave); own != nil && p.format == "text" {
		p.out.err(fmt.Sprintf("loop run: %s: %s\n", own.Code, own.Message))
	}
	if p.progress.verbose() {
		p.out.err("loop run: " + usageText(&p.usage) + "\n")
	}

	flushed := p.settleSave(sigs)
	result, code := p.result(settled, flushed, sig)
	switch p.format {
	case "json":
		p.out.outJSON(result)
	case "stream-json":
		p.out.outJSON(map[string]any{"result": result})
	}
	p.out.close()
	// Shutdown retries a save that is still pending and writes what it
	// cannot save to a recovery file, as the server does at EOF.
	if err := p.e.Shutdown(context.Background(), engine.Drain); err != nil {
		printErrors(p.out.w[1], "loop run", err)
		return exitUnsaved
	}
	return code
}

// refused reports a prompt the session did not accept (a locked session,
// an unsaved result): nothing ran.
func (p *printRun) refused(err error) int {
	code := exitRunError
	err = classify(err)
	var ue *usageError
	if errors.As(err, &ue) {
		code = exitUsage
	}
	p.out.err(fmt.Sprintf("loop run: %v\n", err))
	if code == exitRunError && p.format != "text" {
		r := runResult{SessionID: p.s.ID(), Outcome: engine.OutcomeError, Error: &resultError{Code: engine.CodeOf(err), Message: err.Error()}, Recovered: recoveredOf(p.s)}
		if p.format == "json" {
			p.out.outJSON(r)
		} else {
			p.out.outJSON(map[string]any{"result": r})
		}
	}
	p.out.close()
	_ = p.e.Shutdown(context.Background(), engine.Drain)
	return code
}

// onEvent follows the session's events: stream-json prints each as its
// notification; text streams the answer and one line per tool call.
func (p *printRun) onEvent(ev engine.Event) {
	if ev.SessionID != p.s.ID() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if a, ok := ev.Payload.(*engine.RunAcceptedEvent); ok && a.RequestID == p.in.RequestID && p.runID == "" {
		p.runID = a.RunID
	}
	if p.format == "stream-json" {
		if n, ok := rpc.NotificationOf(ev); ok {
			p.beforeOut()
			p.out.outValue(n)
		}
	}
	defer p.follow(ev)
	switch pl := ev.Payload.(type) {
	case *engine.MessageEvent:
		if pl.RunID != p.runID {
			return
		}
		if pl.Event == "delta" && pl.Type == "text" && pl.Delta != "" && p.format == "text" {
			if pl.MessageID != p.curMsg {
				// Each reply of a tool loop starts on a line of its own.
				if p.lineOpen {
					p.out.out("\n")
				}
				p.curMsg = pl.MessageID
			}
			p.beforeOut()
			p.out.out(pl.Delta)
			p.streamed = true
			p.lineOpen = !strings.HasSuffix(pl.Delta, "\n")
		}
		if pl.Event == "end" && pl.Message != nil && pl.Message.Role == convo.RoleAssistant {
			if t := pl.Message.Text(); t != "" {
				if p.answer.Len() > 0 && !strings.HasSuffix(p.answer.String(), "\n") {
					p.answer.WriteByte('\n')
				}
				p.answer.WriteString(t)
			}
		}
	case *engine.PromptTimingEvent:
		if pl.Event == "finish" && pl.Timing.ID == p.runID {
			p.usage = rpc.UsageTotalsOf(&pl.Timing.Usage)
		}
	case *engine.ToolEvent:
		if pl.RunID != p.runID || p.format != "text" {
			return
		}
		switch {
		case pl.Event == "start":
			p.toolLine("tool: " + toolSummary(pl.Name, pl.Input))
		case pl.Event == "end" && pl.IsError:
			p.toolLine("tool: " + pl.Name + " failed: " + firstLine(blocksText(pl.Result), 160))
		}
	case *engine.AgentSettledEvent:
		if pl.RunID == p.runID && p.settled == nil {
			p.settled = pl
			close(p.settledCh)
		}
	}
}

// toolLine writes one line on stderr. On a terminal, a line of answer
// still open on stdout is ended first so the two do not run together.
func (p *printRun) toolLine(line string) {
	if !p.progress.tools() {
		return
	}
	p.say(p.progress.clear())
	if p.stdoutTTY && p.lineOpen {
		p.out.out("\n")
		p.lineOpen = false
	}
	p.out.err(p.progress.paint(faint, line) + "\n")
}

// settleSave deals with a result the disk refused. With a terminal it
// waits there for /flush; without one it retries once, and Shutdown
// retries again and writes the recovery file. flushed: the result was
// saved after all.
func (p *printRun) settleSave(sigs chan os.Signal) (flushed bool) {
	if !p.s.Snapshot().State.HasPendingSave {
		return false
	}
	_, saveErr := p.s.PendingSave()
	if p.tty == nil {
		_, err := p.s.Flush()
		return err == nil
	}
	p.out.err(fmt.Sprintf("loop run: the result could not be saved: %v; waiting for /flush on the terminal\n", saveErr))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.tty.say("loop: the result could not be saved: %v", saveErr)
	p.tty.say("loop: repair the problem, then type /flush to save it (Ctrl-D or Ctrl-C gives up and writes a recovery file)")
	for {
		line, err := p.tty.ask(ctx, "loop (unsaved)> ")
		if err != nil {
			return false
		}
		switch strings.TrimSpace(line) {
		case "/flush":
			if _, err := p.s.Flush(); err != nil {
				p.tty.say("loop: still not saved: %v", err)
				continue
			}
			p.tty.say("loop: saved")
			return true
		case "":
		default:
			p.tty.say("loop: the result is not saved yet; type /flush once the problem is repaired")
		}
	}
}

// result is the run's outcome as json and the exit status shows it. Once
// a failed save is flushed, what remains is the run's own outcome.
func (p *printRun) result(st *engine.AgentSettledEvent, flushed bool, sig os.Signal) (runResult, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	runID := p.runID
	r := runResult{SessionID: p.s.ID(), RunID: &runID, Outcome: st.Outcome, Text: p.answer.String(), Usage: p.usage, Recovered: recoveredOf(p.s)}
	info := st.Error
	if flushed && info != nil {
		if info = ownError(info, true); info == nil {
			r.Outcome = engine.OutcomeCompleted
			if sig != nil {
				r.Outcome = engine.OutcomeCancelled
			}
		}
	}
	if info != nil {
		r.Error = &resultError{Code: info.Code, Message: info.Message}
	}
	switch {
	case r.Outcome == engine.OutcomeCompleted:
		return r, exitOK
	case r.Outcome == engine.OutcomeCancelled && sig != nil:
		return r, signalStatus(sig)
	}
	return r, exitRunError
}

// ownError is the error a run settled with, less its failure to save
// when saveFailed: nil when saving was all that failed, the run's own
// error when both did.
func ownError(info *engine.ErrorInfo, saveFailed bool) *engine.ErrorInfo {
	switch {
	case info == nil || !saveFailed:
		return info
	case len(info.Errors) > 1:
		first := info.Errors[0]
		return &first
	}
	return nil
}

// printApprover asks on the controlling terminal; without one, a call
// that needs consent is rejected (the model reads why) and noted on stderr.
type printApprover struct {
	tty *terminal
	out *outbox
}

var errNoTerminal = errors.New("loop runs without a terminal, so nobody could approve this call; the user can allow such calls with loop run --permission")

func (a *printApprover) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	what := toolSummary(req.Tool.Name, req.Tool.Input)
	if a.tty == nil {
		a.out.err("loop run: " + what + " needs approval and there is no terminal to ask: rejected (--permission workspace-write or full-access allows it)\n")
		// The model reads this as the reason the call did not run.
		return "", errNoTerminal
	}
	if req.Reason != "" {
		// Why it asks: where bash runs (the sandbox, or none here), or
		// that a command failed in the sandbox and would run without it.
		a.tty.say("loop: %s", req.Reason)
	}
	for {
		line, err := a.tty.ask(ctx, "loop: allow "+what+"? [y] once, [a] for this session, [n] no: ")
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return engine.DecisionRejected, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return engine.DecisionAllowedOnce, nil
		case "a", "always":
			return engine.DecisionAllowedSession, nil
		case "n", "no":
			return engine.DecisionRejected, nil
		}
	}
}

// toolSummary is a tool call in one short line: its name and its
// arguments as compact JSON, cut at 100 characters.
func toolSummary(name string, input json.RawMessage) string {
	var buf bytes.Buffer
	args := strings.TrimSpace(string(input))
	if json.Compact(&buf, input) == nil {
		args = buf.String()
	}
	if args == "" || args == "{}" {
		return name
	}
	return name + " " + cut(args, 100)
}

func blocksText(blocks []convo.Block) string {
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == convo.BlockText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return cut(s, n)
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
