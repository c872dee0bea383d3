package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
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
	_, forkID, err := cur.Rewind(users[i], false)
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	c.say("rewound to before message %d (%d messages kept); what was dropped is session %s (/open %s to go back)", i, users[i], forkID, forkID)
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
