package main

import (
	"fmt"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// Two terminals, one conversation (docs/cli.md): while the chat waits for
// its next prompt it holds no lock on its session, so another process
// (loop run -c, another chat) may continue it. Before a prompt the chat
// takes the lock again and shows what was said elsewhere meanwhile.

// pickUp takes the session's lock again before a prompt and prints the
// messages another process added since, as the chat prints its own. It
// reports whether the prompt may go: false when another process holds the
// session now (session_locked, said on the screen; the prompt is not
// sent, so nothing is lost or sent twice).
func (c *chat) pickUp() bool {
	msgs, _, err := c.session().PickUp()
	if err != nil {
		c.say("  not sent: %s: %v (send it again once that process is done)", engine.CodeOf(err), err)
		return false
	}
	if len(msgs) == 0 {
		return true
	}
	noun := "messages"
	if len(msgs) == 1 {
		noun = "message"
	}
	lines := []string{fmt.Sprintf("(continued elsewhere: %d new %s)", len(msgs), noun)}
	for i := range msgs {
		lines = append(lines, sharedLines(&msgs[i])...)
	}
	c.say("%s", strings.Join(lines, "\n"))
	return true
}

// sharedLines is a message of the history as the chat shows it while it
// streams: a prompt as "> text", an answer's text, a tool call as a
// compact line, its result folded to one line.
func sharedLines(m *convo.Message) []string {
	switch m.Role {
	case convo.RoleUser:
		return []string{"> " + firstLine(m.Text(), 200)}
	case convo.RoleAssistant:
		var out []string
		if text := strings.TrimRight(m.Text(), "\n"); text != "" {
			out = append(out, text)
		}
		for _, b := range m.Content {
			if b.Type == convo.BlockToolCall {
				out = append(out, "  · "+toolSummary(b.Name, b.Arguments))
			}
		}
		return out
	case convo.RoleToolResult:
		mark := "✓"
		if m.IsError {
			mark = "✗"
		}
		return []string{fmt.Sprintf("    %s %s", mark, resultSummary(blocksText(m.Content)))}
	}
	return nil
}
