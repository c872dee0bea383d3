package turn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/tools"
)

// The parts of a session's context for the model, each a text block of a
// user message with convo.AttachmentContext and one of these names. The
// first prompt of a session carries all of them; a later prompt carries a
// part only when it differs from the latest one in the history, so a new
// day, another permission preset or an edited AGENTS.md adds a few tokens
// at the end of the conversation instead of changing the system prompt,
// which would invalidate every cached token after it (docs/storage.md,
// "Context blocks").
const (
	ContextDate         = "date"
	ContextPermission   = "permission"
	ContextInstructions = "instructions"
)

// contextOrder is the order of the parts in a message.
var contextOrder = []string{ContextDate, ContextPermission, ContextInstructions}

// projectInstructionFiles are read from the working directory, first
// found wins.
var projectInstructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructionBytes bounds project instructions.
const maxInstructionBytes = 64 << 10

// noInstructions replaces instructions whose file is gone.
const noInstructions = "Project instructions: none any more (no AGENTS.md or CLAUDE.md in the working directory)."

// Context is the current context of a session working in cwd under
// preset (with sb, the OS sandbox its bash runs in, nil for none), today:
// every part, in order; it reads the project's instructions (AGENTS.md or
// CLAUDE.md). No preset is read-only.
func Context(cwd string, preset tools.Preset, sb *sandbox.Policy, today time.Time) []convo.Block {
	if preset == "" {
		preset = tools.PresetReadOnly
	}
	parts := []convo.Block{
		contextBlock(ContextDate, "Today: "+today.Format("2006-01-02")),
		contextBlock(ContextPermission, strings.TrimRight(tools.PermissionPrompt(preset, sb), "\n")),
	}
	for _, name := range projectInstructionFiles {
		data, err := os.ReadFile(filepath.Join(cwd, name))
		if err != nil {
			continue
		}
		if len(data) > maxInstructionBytes {
			data = data[:maxInstructionBytes]
		}
		parts = append(parts, contextBlock(ContextInstructions, fmt.Sprintf("Project instructions from %s:\n%s", name, data)))
		break
	}
	return parts
}

func contextBlock(name, text string) convo.Block {
	return convo.Block{Type: convo.BlockText, Attachment: convo.AttachmentContext, Name: name, Text: text}
}

// ContextChanges is what of current (Context) a new user message after
// hist must carry: the parts that differ from the latest of their name in
// hist, and for instructions that are gone, a part saying so.
func ContextChanges(hist []convo.Message, current []convo.Block) []convo.Block {
	var seen ContextSeen
	return seen.Changes(hist, current)
}

// ContextSeen is the latest text of each context part in a history that
// only grows, kept between prompts, so that finding what a new prompt must
// carry reads only the messages added since the last prompt, not the whole
// history (a session without AGENTS.md never has every part to stop at).
// The zero value has seen nothing.
type ContextSeen struct {
	have map[string]string
	upto int // hist[:upto] is in have
}

// Changes is ContextChanges, reading only hist[c.upto:]. A history
// shorter than what was seen (not one that grew) is read again whole.
func (c *ContextSeen) Changes(hist []convo.Message, current []convo.Block) []convo.Block {
	if c.have == nil || len(hist) < c.upto {
		c.have, c.upto = map[string]string{}, 0
	}
	for _, m := range hist[c.upto:] {
		if m.Role != convo.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Attachment == convo.AttachmentContext {
				c.have[b.Name] = b.Text
			}
		}
	}
	c.upto = len(hist)
	have := c.have
	var out []convo.Block
	for _, name := range contextOrder {
		cur, ok := findPart(current, name)
		old, had := have[name]
		switch {
		case ok && (!had || old != cur.Text):
			out = append(out, cur)
		case !ok && had && old != noInstructions && name == ContextInstructions:
			out = append(out, contextBlock(ContextInstructions, noInstructions))
		}
	}
	return out
}

func findPart(parts []convo.Block, name string) (convo.Block, bool) {
	for _, b := range parts {
		if b.Name == name {
			return b, true
		}
	}
	return convo.Block{}, false
}

// latestContext is the text of each part as of history index end: the
// latest block of its name in hist[:end].
func latestContext(hist []convo.Message, end int) map[string]string {
	have := map[string]string{}
	for i := end - 1; i >= 0 && len(have) < len(contextOrder); i-- {
		if hist[i].Role != convo.RoleUser {
			continue
		}
		for _, b := range hist[i].Content {
			if b.Attachment == convo.AttachmentContext {
				if _, ok := have[b.Name]; !ok {
					have[b.Name] = b.Text
				}
			}
		}
	}
	return have
}

// contextAt is the context as of history index end, as blocks in order:
// what a checkpoint's summary carries for the messages it replaces.
func contextAt(hist []convo.Message, end int) []convo.Block {
	have := latestContext(hist, end)
	var out []convo.Block
	for _, name := range contextOrder {
		if t, ok := have[name]; ok && !(name == ContextInstructions && t == noInstructions) {
			out = append(out, contextBlock(name, t))
		}
	}
	return out
}
