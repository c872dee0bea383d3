package turn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/tools"
)

// Spec is what a request carries besides its messages: the model, the
// answer's maximum, the effort, the system prompt (SystemPrompt) and the
// tools, in the order the model is offered them.
type Spec struct {
	Model           string
	MaxOutputTokens int
	Effort          string
	System          string
	Tools           []provider.Tool
}

// Build assembles one model request from the draft and spec. Runtime
// data (timings, titles) never enters it. expand returns a message naming
// skills as the model gets it, their instructions first; it is called
// only when the draft NamesSkills. The cost Build returns holds an upper
// bound of the request's tokens; Fit counts exactly only when that bound
// could exceed the budget. What Build computed for the session to keep
// comes back in the Update.
func (d Draft) Build(spec Spec, expand func(convo.Message) convo.Message) (provider.Request, Cost, Update) {
	var u Update
	in := d.in
	in.finish(d.bounds, expand, &u)
	req := provider.Request{
		Model:           spec.Model,
		System:          spec.System,
		Messages:        in.msgs,
		MaxOutputTokens: spec.MaxOutputTokens,
		Effort:          spec.Effort,
		Tools:           spec.Tools,
	}
	fixed := d.fixed
	if !fixed.same(req.System, req.Tools) {
		fixed = newFixedCost(req.System, req.Tools)
		u.fixed = fixed
	}
	return req, Cost{in: in, fixed: fixed}, u
}

// Cost is what the budget checks of one request need.
type Cost struct {
	in    Input
	fixed *fixedCost
}

// Input is the request's model input.
func (c *Cost) Input() *Input { return &c.in }

// Bound is an upper bound of the request's tokens, without the tokenizer.
func (c *Cost) Bound() int { return c.fixed.bound + c.in.bound }

// fixedTokens is the exact count of the system prompt and tools, counted
// once per change of either; u asks the State to keep the count.
func (c *Cost) fixedTokens(tok *Counter, u *Update) int {
	if c.fixed.exact < 0 {
		f := *c.fixed
		f.exact = fixedTokens(f.system, f.tools, tok.Count)
		u.counted, u.of = &f, c.fixed
		c.fixed = &f
	}
	return c.fixed.exact
}

// Exact is the request's token count: what the budget rule compares
// (docs/protocol.md). s is a copy of the session's exact running sums.
func (c *Cost) Exact(tok *Counter, s Sums) (int, Update) {
	var u Update
	var lead *convo.Message
	if c.in.off == 1 {
		lead = &c.in.msgs[0]
	}
	n := c.fixedTokens(tok, &u)
	m, g := c.in.exactTokens(tok, s, c.in.from, lead)
	u.exact = g
	return n + m, u
}

// Kept is the exact count of the request a checkpoint ending at cut would
// leave: the system prompt and tools, an empty summary, and the messages
// from cut on. What a summary may take is the window's room above it.
func (c *Cost) Kept(tok *Counter, s Sums, cut int) (int, Update) {
	var u Update
	n := c.fixedTokens(tok, &u)
	lead := summaryMessage("")
	m, g := c.in.exactTokens(tok, s, cut, &lead)
	u.exact = g
	return n + m, u
}

// exactTokens counts in's messages from history index from on, as a
// request carries them, led by lead (the checkpoint's summary, or the one
// a compaction would write; nil: none) and ending in the resume prompt
// when in does. History messages are counted once per session (through
// the running sums s copies); skill messages are counted as expanded.
func (in *Input) exactTokens(tok *Counter, s Sums, from int, lead *convo.Message) (int, grown) {
	n, g := s.exact.sum(in.hist, from, len(in.hist), tok.MessageTokens)
	if lead != nil {
		n += tok.MessageTokens(lead)
	}
	for _, i := range in.skills {
		if in.histIndex(i) >= from {
			n += tok.MessageTokens(&in.msgs[i])
		}
	}
	if in.cont {
		n += tok.MessageTokens(&in.msgs[len(in.msgs)-1])
	}
	return n, g
}

// basePrompt is the fixed part of the system prompt.
const basePrompt = `You are Loop, a coding agent working in the user's project.
Use the tools to read, search and change files and to run commands. Keep answers short and concrete.
Paths are relative to the working directory unless absolute.`

// projectInstructionFiles are read from the working directory into the
// system prompt, first found wins.
var projectInstructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructionBytes bounds project instructions in the system prompt.
const maxInstructionBytes = 64 << 10

// SystemPrompt is the system prompt of a session working in cwd under
// preset, today: the fixed part, the permission section of the preset
// (with sb, the OS sandbox its bash runs in, nil for none) and the
// project's instructions (AGENTS.md or CLAUDE.md), which it reads.
// No preset is read-only.
func SystemPrompt(cwd string, preset tools.Preset, sb *sandbox.Policy, today time.Time) string {
	if preset == "" {
		preset = tools.PresetReadOnly
	}
	var b strings.Builder
	b.WriteString(basePrompt)
	fmt.Fprintf(&b, "\n\nWorking directory: %s\nToday: %s\n", cwd, today.Format("2006-01-02"))
	b.WriteString("\n")
	b.WriteString(tools.PermissionPrompt(preset, sb))
	for _, name := range projectInstructionFiles {
		data, err := os.ReadFile(filepath.Join(cwd, name))
		if err != nil {
			continue
		}
		if len(data) > maxInstructionBytes {
			data = data[:maxInstructionBytes]
		}
		fmt.Fprintf(&b, "\n\nProject instructions from %s:\n%s", name, data)
		break
	}
	return b.String()
}
