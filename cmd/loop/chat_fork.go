package main

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tui"
)

// The chat's /fork and /rewind (docs/cli.md "loop chat"): a way back in
// the conversation, on the engine's Session.Fork and Session.Rewind.

// fork is /fork [N]: a new session holding the first N saved messages of
// this one (all of them without N), which the chat switches to.
func (c *chat) fork(args []string) {
	cur := c.session()
	snap := cur.Snapshot()
	n := snap.State.MessageCount
	if len(args) > 1 {
		c.say("usage: /fork [MESSAGECOUNT]")
		return
	}
	if len(args) == 1 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 0 {
			c.say("usage: /fork [MESSAGECOUNT] (a number of saved messages, 0 to %d)", n)
			return
		}
		n = v
	}
	f, err := cur.Fork(n, "")
	if err == nil {
		_, err = c.rt.SwitchSession(context.Background(), f.ID())
	}
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	c.say("forked %s at %d messages: now in session %s (/open %s goes back)", cur.ID(), n, f.ID(), cur.ID())
}

// rewind is /rewind [N]: without N it lists the saved user messages, each
// with its number; with N the session continues from just before user
// message N, and what it drops stays as a session of its own.
func (c *chat) rewind(args []string) {
	cur := c.session()
	snap := cur.Snapshot()
	saved := snap.State.Messages
	if k := snap.State.MessageCount - snap.State.MessagesFrom; k >= 0 && k < len(saved) {
		saved = saved[:k]
	}
	users := userMessages(saved, snap.State.MessagesFrom)
	if len(args) == 0 {
		if len(users) == 0 {
			c.say("no saved user messages to rewind to")
			return
		}
		c.say("user messages (/rewind N continues from just before message N):")
		for i, u := range users {
			c.say("  %d  %s", i, shortLine(saved[u-snap.State.MessagesFrom].Text(), 72))
		}
		return
	}
	i, err := strconv.Atoi(args[0])
	if len(args) > 1 || err != nil || i < 0 || i >= len(users) {
		c.say("usage: /rewind [N] (N from 0 to %d; /rewind lists them)", len(users)-1)
		return
	}
	files := false
	if changed := c.changedSince(cur, users[i]); len(changed) > 0 {
		yes, answered := c.yes("put the files back too? (no keeps them as they are)", "changed since: "+strings.Join(changed, ", "))
		if !answered {
			c.say("rewind cancelled: nothing changed")
			return
		}
		files = yes
	}
	forkID, ok := c.rewindTo(cur, users[i], files)
	if !ok {
		return
	}
	c.say("rewound to before message %d (%d messages kept%s); what was dropped is session %s (%s)", i, users[i], filesNote(files), forkID, goBack(forkID, files))
}

// rewindTo rewinds cur to at, putting the files back first when files.
// Files changed outside Loop since the agent left them are a question
// here, where the protocol answers files_conflict: yes puts them back
// too (a forced restore, then the rewind), no or Esc changes nothing.
// It says what went wrong itself, and reports whether the rewind
// happened.
func (c *chat) rewindTo(cur *engine.Session, at int, files bool) (forkID string, ok bool) {
	ctx := context.Background()
	_, forkID, err := cur.Rewind(ctx, at, files)
	var conflict *engine.FilesConflictError
	if files && errors.As(err, &conflict) {
		yes, _ := c.yes("overwrite them too?", "changed outside Loop since the agent left them: "+strings.Join(conflict.Paths, ", "))
		if !yes {
			c.say("nothing changed: the files and the conversation are as they were")
			return "", false
		}
		if _, err = cur.RestoreFiles(ctx, at, true); err == nil {
			_, forkID, err = cur.Rewind(ctx, at, false)
		}
	}
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return "", false
	}
	return forkID, true
}

// undo is /undo: the last run goes, its messages and the files it
// changed (a rewind with files to where it started); what it drops stays
// as a session of its own.
func (c *chat) undo() {
	cur := c.session()
	timings := cur.Snapshot().State.PromptTimings
	if len(timings) == 0 || !timings[len(timings)-1].MessageStartIndex.Set {
		c.say("nothing to undo: no saved run")
		return
	}
	at := timings[len(timings)-1].MessageStartIndex.Value
	forkID, ok := c.rewindTo(cur, at, true)
	if !ok {
		return
	}
	c.say("undid the last run (%d messages kept, files put back); what was dropped is session %s (%s)", at, forkID, goBack(forkID, true))
}

// changedSince is the files the runs from history index at on changed,
// by Session.Changes; none when it cannot tell.
func (c *chat) changedSince(s *engine.Session, at int) []string {
	runs, err := s.Changes(context.Background())
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if r.MessageStartIndex < at {
			continue
		}
		for _, f := range r.Files {
			if !seen[f.Path] {
				seen[f.Path] = true
				out = append(out, f.Path)
			}
		}
	}
	return out
}

// yes asks a yes-or-no question with one key (y or n), as approvals are
// asked; answered is false when it was put away with Esc or Ctrl-C.
func (c *chat) yes(title, reason string) (yes, answered bool) {
	answer := make(chan tui.Decision, 1)
	c.ui.Send(tui.Ask{Title: title, Reason: reason, YesNo: true, Answer: func(d tui.Decision) { answer <- d }})
	d := <-answer
	return d == tui.AllowOnce, d != tui.Cancel
}

func filesNote(files bool) string {
	if files {
		return ", files put back"
	}
	return ""
}

// userMessages returns the history indexes of the user messages of msgs,
// whose first is history index from.
func userMessages(msgs []convo.Message, from int) []int {
	var out []int
	for i := range msgs {
		if msgs[i].IsUser() {
			out = append(out, from+i)
		}
	}
	return out
}

// shortLine is s on one line, its spaces squeezed, cut to n runes.
func shortLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
