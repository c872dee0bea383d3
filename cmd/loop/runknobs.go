package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tui"
)

// runKnobs are the flags of loop run that shape its agent loop and what
// its prompt carries (docs/cli.md, "loop run"): the system prompt, the
// tools, the most model requests and cost of the run, attached files,
// and how much it says on stderr.
type runKnobs struct {
	systemPrompt       string
	appendSystemPrompt string
	tools, disallowed  toolList
	maxTurns           int
	maxBudget          budgetFlag
	files              []string
	quiet, verbose     bool
	color              string // --color: auto, always or never
}

// toolList is --tools or --disallowed-tools: names separated by commas or
// spaces; the flag may be repeated. Given empty, it is an empty list (no
// tools), not an absent one.
type toolList struct {
	names []string
	set   bool
}

func (l *toolList) String() string { return strings.Join(l.names, ",") }

func (l *toolList) Set(v string) error {
	l.set = true
	l.names = append(l.names, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })...)
	return nil
}

// list is the names as engine.AgentOptions takes them: nil when the flag
// was not given.
func (l *toolList) list() []string {
	if !l.set {
		return nil
	}
	return append([]string{}, l.names...)
}

// budgetFlag is --max-budget-usd: a positive amount, or unset.
type budgetFlag struct {
	value float64
	set   bool
}

func (b *budgetFlag) String() string {
	if !b.set {
		return ""
	}
	return strconv.FormatFloat(b.value, 'f', -1, 64)
}

func (b *budgetFlag) Set(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return fmt.Errorf("%q is not a positive amount", v)
	}
	b.value, b.set = f, true
	return nil
}

func (k *runKnobs) register(fs *flag.FlagSet) {
	fs.StringVar(&k.systemPrompt, "system-prompt", "", "replace Loop's system prompt with `TEXT` for this run")
	fs.StringVar(&k.appendSystemPrompt, "append-system-prompt", "", "add `TEXT` after the system prompt for this run")
	fs.Var(&k.tools, "tools", "the only tools the model is offered and may call, a `LIST` separated by commas: read, write, edit, bash, ls, grep, find, mcp__SERVER (all of a server's), mcp__SERVER__TOOL; \"\" for none")
	fs.Var(&k.disallowed, "disallowed-tools", "a `LIST` of tools the model is not offered and may not call, in the names of --tools")
	fs.IntVar(&k.maxTurns, "max-turns", 0, "the most model requests (`N`) of the run; past it the run ends with budget_exceeded (default: Loop's bound, 200)")
	fs.Var(&k.maxBudget, "max-budget-usd", "the most (`AMOUNT`) the run's model calls may cost, in config.json's prices: the session's promptCost budget, saved with it (the model needs prices)")
	fs.Func("file", "attach the file at `PATH` to the prompt: a text file, or a PNG, JPEG, WebP or GIF image (repeatable)", func(v string) error {
		if v == "" {
			return errors.New("a path is required")
		}
		k.files = append(k.files, v)
		return nil
	})
	fs.BoolVar(&k.quiet, "quiet", false, "say nothing on stderr but errors: no tool calls, no progress")
	fs.BoolVar(&k.verbose, "verbose", false, "say more on stderr: progress and retries also when it is no terminal, each tool's end, the run's usage")
	fs.StringVar(&k.color, "color", "auto", "colour on stderr (`WHEN`): auto (a terminal, without NO_COLOR), always or never; stdout's answer is never coloured")
}

// check rejects values the flags cannot take, before anything is opened.
func (k *runKnobs) check() error {
	if k.maxTurns < 0 {
		return usagef("--max-turns must not be negative, got %d", k.maxTurns)
	}
	if k.quiet && k.verbose {
		return usagef("--quiet and --verbose exclude each other")
	}
	switch tui.ColorMode(k.color) {
	case tui.ColorAuto, tui.ColorAlways, tui.ColorNever:
	default:
		return usagef("--color %q is not auto, always or never", k.color)
	}
	return nil
}

// agentOptions are the flags as the engine takes them.
func (k *runKnobs) agentOptions() engine.AgentOptions {
	return engine.AgentOptions{
		SystemPrompt:       k.systemPrompt,
		AppendSystemPrompt: k.appendSystemPrompt,
		Tools:              k.tools.list(),
		DisallowedTools:    k.disallowed.list(),
		MaxTurns:           k.maxTurns,
	}
}

// attach reads the --file attachments into in and checks the whole
// submission as the protocol checks session/prompt's (engine.ValidatePrompt):
// a bad attachment is bad usage.
func (k *runKnobs) attach(in *engine.PromptInput) error {
	if len(k.files) == 0 {
		return nil
	}
	for _, path := range k.files {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return usagef("--file %s: no such file", path)
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return usagef("--file %s: %v", path, err)
		}
		if mime := engine.ImageType(data); mime != "" {
			in.Images = append(in.Images, engine.Image{Type: "image", Data: base64.StdEncoding.EncodeToString(data), MimeType: mime})
			continue
		}
		in.Files = append(in.Files, engine.File{Name: filepath.Base(path), Text: string(data)})
	}
	if err := engine.ValidatePrompt(*in); err != nil {
		return classify(err)
	}
	return nil
}

// precheck checks, once the engine is open and before a session is
// opened or made, what can be checked then: the tool names (against the
// MCP servers of the directory the session will work in), and that the
// model a new session gets has prices for --max-budget-usd.
func (k *runKnobs) precheck(sf *sessionFlags) func(*engine.Engine) error {
	return func(e *engine.Engine) error {
		if sf.session != "" {
			// The session's own directory decides; apply checks then.
			return nil
		}
		cwd, err := sf.workDir()
		if err != nil {
			return err
		}
		if err := e.CheckAgentOptions(cwd, k.agentOptions()); err != nil {
			return classify(err)
		}
		if k.maxBudget.set && !sf.cont {
			m, err := e.NewSessionModel(sf.options())
			if err != nil {
				return classify(err)
			}
			return unpriced(&m)
		}
		return nil
	}
}

// apply gives the opened session the run's agent options and budget.
func (k *runKnobs) apply(s *engine.Session) error {
	if err := s.SetAgentOptions(k.agentOptions()); err != nil {
		return classify(err)
	}
	if !k.maxBudget.set {
		return nil
	}
	if m := s.Snapshot().ModelInfo; m != nil {
		if err := unpriced(m); err != nil {
			return err
		}
	}
	_, err := s.SetBudget(engine.BudgetChange{PromptCost: &engine.BudgetLimit[float64]{Value: k.maxBudget.value}})
	return err
}

// unpriced refuses --max-budget-usd for a model without prices: nothing
// could tell what its calls cost, so the budget could not be enforced.
func unpriced(m *engine.Model) error {
	if m.Cost != nil {
		return nil
	}
	return usagef("--max-budget-usd: model %s/%s has no prices in config.json (models[].cost), so a cost budget cannot be enforced", m.Provider, m.ID)
}
