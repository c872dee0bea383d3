package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/tools"
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
// follows the current preset. It holds the session lock only to copy the
// history view: tokenizing, reading skill folders and instruction files
// happen after (docs/lock-order.md).
func (s *Session) buildRequest(ctx context.Context, m Model) (provider.Request, int, error) {
	h := s.st.Header()
	s.mu.Lock()
	v := s.historyViewLocked()
	s.mu.Unlock()
	msgs, msgTokens := s.modelInput(v, v.cp)
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

// historyView is what a request build copies under the session lock. It
// shares memory with the session: history messages never change once
// appended and the history only grows, and the same holds for the token
// counts, so a view stays valid while the session goes on; its slices are
// capped, so appending to them never writes into the session's.
type historyView struct {
	msgs   []store.Message
	counts []int       // token counts of msgs[:len(counts)]; -1: not memoized
	cp     *checkpoint // the latest checkpoint, nil when there is none
}

func (s *Session) historyViewLocked() historyView {
	return historyView{
		msgs:   s.history[:len(s.history):len(s.history)],
		counts: s.tokenCounts[:len(s.tokenCounts):len(s.tokenCounts)],
		cp:     s.checkpointLocked(),
	}
}

// modelInput is the history of v as the model sees it: after checkpoint
// cp (nil: none; a compaction can be costed before it is made), its
// summary stands for the older messages; named skills expand into their
// user messages. Stored messages never change. It also returns the
// messages' token count, using and extending the session's memoized
// counts. It runs without the session lock: it tokenizes and reads skill
// folders.
func (s *Session) modelInput(v historyView, cp *checkpoint) ([]store.Message, int) {
	start := 0
	var out []store.Message
	tokens := 0
	if cp != nil && cp.MessageCount <= len(v.msgs) {
		start = cp.MessageCount
		sum := store.Message{Role: store.RoleUser, Content: []store.Block{{Type: store.BlockText, Text: summaryPrefix + cp.Summary}}}
		out = append(out, sum)
		tokens += s.e.tokens.messageTokens(&sum)
	}
	counts := v.counts
	var skills []Skill // read once per request, when a message names any
	skillsRead := false
	for i := start; i < len(v.msgs); i++ {
		m := v.msgs[i]
		memo := -1 // an expanded message is counted afresh: skill files change
		if m.Role == store.RoleUser && len(m.Skills) > 0 {
			if !skillsRead {
				skills, skillsRead = s.e.skillsIn(s.skillCwd()), true
			}
			m = s.expandSkills(m, skills)
			tokens += s.e.tokens.messageTokens(&m)
		} else if i < len(v.counts) && v.counts[i] >= 0 {
			tokens += v.counts[i]
		} else {
			memo = s.e.tokens.messageTokens(&v.msgs[i])
			tokens += memo
		}
		if i == len(counts) {
			counts = append(counts, memo)
		}
		out = append(out, m)
	}
	s.rememberTokenCounts(counts)
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

// rememberTokenCounts keeps the counts a build computed beyond those the
// session memoized. counts extends a prefix of the session's counts (both
// only grow, and index i always counts history message i), so only its
// tail is new.
func (s *Session) rememberTokenCounts(counts []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.tokenCounts); len(counts) > n && len(counts) <= len(s.history) {
		s.tokenCounts = append(s.tokenCounts, counts[n:]...)
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
