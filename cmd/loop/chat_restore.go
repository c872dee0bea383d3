package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/loopdev/loop/engine"
)

// restore is /restore [N]: the workspace's files go back to their state
// at N saved messages (session/restore_files without force; all of them
// without N). At the whole history it undoes the last restore made
// there: on the session a rewind with files or /undo kept of what it
// dropped, the files as the dropped runs left them (docs/cli.md).
func (c *chat) restore(args []string) {
	cur := c.session()
	n := cur.Snapshot().State.MessageCount
	if len(args) > 1 {
		c.say("usage: /restore [MESSAGECOUNT]")
		return
	}
	if len(args) == 1 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 0 || v > n {
			c.say("usage: /restore [MESSAGECOUNT] (a number of saved messages, 0 to %d)", n)
			return
		}
		n = v
	}
	res, err := cur.RestoreFiles(context.Background(), n, false)
	switch {
	case err != nil:
		c.say("  %s: %v", engine.CodeOf(err), err)
	case len(res.Conflicts) > 0:
		c.say("nothing put back: changed outside Loop since: %s", strings.Join(res.Conflicts, ", "))
	case len(res.Restored) == 0:
		c.say("nothing to put back at %d messages", n)
	default:
		c.say("put back at %d messages: %s", n, strings.Join(res.Restored, ", "))
	}
}

// goBack is how to go back to the session a rewind kept of what it
// dropped, and, when the rewind put files back, to get those files back.
func goBack(forkID string, files bool) string {
	if files {
		return "/open " + forkID + " to go back, then /restore to get its files back"
	}
	return "/open " + forkID + " to go back"
}
