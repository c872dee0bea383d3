package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/engine/provider"
	"github.com/loopdev/loop/engine/tools"
	"github.com/loopdev/loop/store"
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
// follows the current preset.
func (s *Session) buildRequest(ctx context.Context, m Model) (provider.Request, int, error) {
	s.mu.Lock()
	h := s.st.Header()
	msgs, msgTokens := s.modelInputLocked()
	s.mu.Unlock()
	preset := tools.Preset(h.Permission)
	if preset == "" {
		preset = tools.PresetReadOnly
	}
	req := provider.Request{
		Model:           m.ID,
		System:          s.systemPrompt(preset),
		Messages:        msgs,
		MaxOutputTokens: m.MaxOutputTokens,
		Effort:          h.Effort,
	}
	for _, t := range tools.Builtin() {
		req.Tools = append(req.Tools, provider.Tool{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	for _, t := range s.mcpTools(ctx) {
		req.Tools = append(req.Tools, provider.Tool{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	tokens := msgTokens + s.e.tokens.requestTokens(&provider.Request{System: req.System, Tools: req.Tools}, nil)
	return req, tokens, ctx.Err()
}

// modelInputLocked is the history as the model sees it: after the latest
// checkpoint, its summary stands for the older messages; named skills
// expand into their user messages. Stored messages never change. It also
// returns the messages' token count (history counts are memoized).
func (s *Session) modelInputLocked() ([]store.Message, int) {
	return s.modelInputAtLocked(s.checkpointLocked())
}

// modelInputAtLocked is modelInputLocked with cp as the latest checkpoint
// (nil: none), so a compaction can be costed before it is made.
func (s *Session) modelInputAtLocked(cp *checkpoint) ([]store.Message, int) {
	start := 0
	var out []store.Message
	tokens := 0
	if cp != nil && cp.MessageCount <= len(s.history) {
		start = cp.MessageCount
		sum := store.Message{Role: store.RoleUser, Content: []store.Block{{Type: store.BlockText, Text: summaryPrefix + cp.Summary}}}
		out = append(out, sum)
		tokens += s.e.tokens.messageTokens(&sum)
	}
	if s.tokenCache == nil {
		s.tokenCache = map[int]int{}
	}
	var skills []Skill // read once per request, when a message names any
	skillsRead := false
	for i := start; i < len(s.history); i++ {
		m := s.history[i]
		if m.Role == store.RoleUser && len(m.Skills) > 0 {
			if !skillsRead {
				skills, skillsRead = s.e.skillsIn(s.skillCwd()), true
			}
			m = s.expandSkills(m, skills)
			tokens += s.e.tokens.messageTokens(&m)
		} else {
			n, ok := s.tokenCache[i]
			if !ok {
				n = s.e.tokens.messageTokens(&s.history[i])
				s.tokenCache[i] = n
			}
			tokens += n
		}
		out = append(out, m)
	}
	if n := len(out); n > 0 && out[n-1].Role == store.RoleAssistant {
		// Resuming after a stop: the history ends in the model's own
		// partial answer. APIs treat a final assistant message as a
		// prefill with rules of its own (Anthropic rejects trailing
		// whitespace and thinking there), so the model is asked to go on.
		cont := store.Message{Role: store.RoleUser, Content: []store.Block{{Type: store.BlockText, Text: resumePrompt}}}
		out = append(out, cont)
		tokens += s.e.tokens.messageTokens(&cont)
	}
	return out, tokens
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
