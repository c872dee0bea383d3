package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/tools"
)

// basePrompt is the fixed part of the system prompt.
const basePrompt = `You are Loop, a coding agent working in the user's project.
Use the tools to read, search and change files and to run commands. Keep answers short and concrete.
Paths are relative to the working directory unless absolute.`

// projectInstructionFiles are read from the working directory into the
// system prompt, first found wins.
var projectInstructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructionBytes bounds project instructions in the system prompt.
const maxInstructionBytes = 64 << 10

// buildRequest assembles one model request from the session's history.
// Runtime data (timings, titles) never enters it; the permission section
// follows the current preset. It holds the session lock only to bring the
// cached model input up to the history (modelinput.go): expanding skills,
// reading instruction files and any tokenizing happen after
// (docs/lock-order.md). The cost it returns holds an upper bound of the
// request's tokens; fitRequest counts exactly only when that bound could
// exceed the budget.
func (s *Session) buildRequest(ctx context.Context, m Model) (provider.Request, requestCost, error) {
	h := s.st.Header()
	s.mu.Lock()
	in := s.modelInputLocked()
	gen := s.input.gen
	fixed := s.fixed
	s.mu.Unlock()
	s.finishInput(&in, gen)
	preset := tools.Preset(h.Permission)
	if preset == "" {
		preset = tools.PresetReadOnly
	}
	req := provider.Request{
		Model:           m.ID,
		System:          s.systemPrompt(preset),
		Messages:        in.msgs,
		MaxOutputTokens: m.MaxOutputTokens,
		Effort:          h.Effort,
	}
	req.Tools = slices.Clip(s.e.builtinTools)
	for _, t := range s.mcpTools(ctx) {
		req.Tools = append(req.Tools, provider.Tool{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	if !fixed.same(req.System, req.Tools) {
		fixed = newFixedCost(req.System, req.Tools)
		s.mu.Lock()
		s.fixed = fixed
		s.mu.Unlock()
	}
	return req, requestCost{in: in, fixed: fixed}, ctx.Err()
}

// requestCost is what the budget check of one request needs.
type requestCost struct {
	in    modelInput
	fixed *fixedCost
}

// bound is an upper bound of the request's tokens, without the tokenizer.
func (c *requestCost) bound() int { return c.fixed.bound + c.in.bound }

// fixedTokens is the exact count of the system prompt and tools, counted
// once per change of either.
func (s *Session) fixedTokens(c *requestCost) int {
	if c.fixed.exact < 0 {
		f := *c.fixed
		f.exact = fixedTokens(f.system, f.tools, s.e.tokens.count)
		s.mu.Lock()
		if s.fixed == c.fixed {
			s.fixed = &f
		}
		s.mu.Unlock()
		c.fixed = &f
	}
	return c.fixed.exact
}

// exactTokens is the request's token count: what the budget rule compares
// (docs/protocol.md).
func (s *Session) exactTokens(c *requestCost) int {
	var lead *convo.Message
	if c.in.off == 1 {
		lead = &c.in.msgs[0]
	}
	return s.fixedTokens(c) + s.exactInputTokens(&c.in, c.in.from, lead)
}

// historyView is what a summary copies under the session lock. It
// shares memory with the session: history messages never change once
// appended and the history only grows, so a view stays valid while the
// session goes on; its slice is capped, so appending to it never writes
// into the session's.
type historyView struct {
	msgs []convo.Message
	cp   *checkpoint // the latest checkpoint, nil when there is none
}

func (s *Session) historyViewLocked() historyView {
	return historyView{
		msgs: s.history[:len(s.history):len(s.history)],
		cp:   s.checkpointLocked(),
	}
}

// resumePrompt asks the model to continue stopped work (model input only).
const resumePrompt = "Continue from where you stopped."

func (s *Session) systemPrompt(preset tools.Preset) string {
	var b strings.Builder
	b.WriteString(basePrompt)
	fmt.Fprintf(&b, "\n\nWorking directory: %s\nToday: %s\n", s.cwd, time.Now().Format("2006-01-02"))
	b.WriteString("\n")
	b.WriteString(tools.PermissionPrompt(preset))
	for _, name := range projectInstructionFiles {
		data, err := os.ReadFile(filepath.Join(s.cwd, name))
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
