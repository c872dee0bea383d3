package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
)

const chatHelp = `Commands:
  /help                      this list
  /new                       a new session in the same workspace (and mode)
  /sessions                  this workspace's sessions, newest first
  /open ID|PATH              open another session (an id, or its directory or header.json) and show it
  /model [PROVIDER/ID] [EFFORT]  show the models, or switch
  /permission [PRESET]       show the preset, or switch: read-only, workspace-write, ask, full-access
  /title TEXT                name the session
  /compact                   summarize older messages for the model (history is kept)
  /fork [N]                  continue in a new session holding the first N saved messages (default: all)
  /rewind [N]                list the user messages, or continue from just before message N (what is dropped stays as a session; asks whether to put the files back too)
  /undo                      undo the last run: its messages, and the files it changed (what is dropped stays as a session)
  /restore [N]               put the files back to their state at N saved messages (default: all: undoes the last restore, or a rewind's on the session it kept)
  /resume [ID]               continue a stopped run; else pick a session to open (or open ID)
  /queue [delete N | send N] show what waits behind the run, delete item N, or release held item N
  /flush                     save a result the disk refused, once the problem is repaired
  /usage                     the session's tokens and cost, titles and compaction apart, and its budget
  /budget [LIMIT N|off]...   show or set the limits: sessionTokens, sessionCost, promptTokens, promptCost
  /exit                      leave (Ctrl-D too; refused while a result is unsaved)
Typing during a run queues the input; Ctrl-C stops the run.`

// command runs a slash command; true means exit.
func (c *chat) command(line string) bool {
	fields := strings.Fields(line)
	name, args := fields[0], fields[1:]
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), name))
	s := c.session()
	switch name {
	case "/help":
		c.say("%s", chatHelp)
	case "/exit", "/quit":
		return c.tryExit()
	case "/new":
		c.newSession()
	case "/sessions":
		c.listSessions()
	case "/open":
		if len(args) != 1 {
			c.say("usage: /open ID|PATH")
			break
		}
		c.open(args[0])
	case "/model":
		c.model(args)
	case "/permission":
		if len(args) == 0 {
			names := []string{}
			for _, p := range tools.Presets() {
				names = append(names, string(p))
			}
			c.say("permission: %s (others: %s)", s.Snapshot().State.PermissionPreset, strings.Join(names, ", "))
			c.say("  %s", c.sandboxLine(s))
			break
		}
		if _, err := s.SetPermission(args[0]); err != nil {
			c.say("  %s: %v", engine.CodeOf(err), err)
			break
		}
		c.say("permission: %s", args[0])
		c.say("  %s", c.sandboxLine(s))
	case "/title":
		if rest == "" {
			c.say("title: %q", s.Snapshot().State.Title)
			break
		}
		snap, err := s.SetTitle(rest)
		if err != nil {
			c.say("  %s: %v", engine.CodeOf(err), err)
			break
		}
		c.say("title: %s", snap.State.Title)
	case "/compact":
		c.say("compacting…")
		go func() {
			snap, err := s.Compact(context.Background())
			if err != nil {
				c.say("  %s: %v", engine.CodeOf(err), err)
				return
			}
			if cm := snap.State.Compaction; cm != nil {
				c.say("compacted: the model now reads a summary in place of the first %d messages (about %d tokens)", cm.MessageCount, cm.TokensBefore)
			} else {
				c.say("compacted")
			}
		}()
	case "/fork":
		c.fork(args)
	case "/rewind":
		c.rewind(args)
	case "/undo":
		c.undo()
	case "/restore":
		c.restore(args)
	case "/resume":
		// A stopped run of this session goes on; with nothing stopped, the
		// picker opens (docs/cli.md).
		if len(args) == 1 {
			c.open(args[0])
			break
		}
		_, err := s.Resume()
		switch {
		case engine.CodeOf(err) == engine.CodeNotResumable:
			c.pick()
		case err != nil:
			c.say("  %s: %v", engine.CodeOf(err), err)
		}
	case "/queue":
		c.queue(args)
	case "/usage":
		c.say("%s", usageReport(&s.Snapshot().State))
	case "/budget":
		c.budget(args)
	case "/flush":
		if _, err := s.Flush(); err != nil {
			c.say("  still not saved: %v", err)
			break
		}
		c.say("saved")
	default:
		c.say("no command %s (/help lists them; start a line with a space to send it as text)", name)
	}
	return false
}

func (c *chat) newSession() {
	cur := c.session()
	opts := engine.SessionOptions{}
	var next *engine.Session
	var err error
	if snap := cur.Snapshot(); snap.Operation != engine.OpIdle || snap.State.HasPendingSave {
		c.say("  the current session is busy or has an unsaved result")
		return
	}
	if c.sf.noSession {
		next, err = c.e.NewInMemorySession(cur.Cwd(), opts)
	} else {
		next, err = c.e.CreateSession(cur.WorkspaceID(), opts)
	}
	if err == nil {
		_, err = c.rt.SwitchSession(context.Background(), next.ID())
	}
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	c.say("new session %s", next.ID())
}

func (c *chat) open(arg string) {
	s, err := openNamed(c.e, arg)
	if err == nil {
		_, err = c.rt.SwitchSession(context.Background(), s.ID())
	}
	if err != nil {
		c.say("  %s", describe(err))
		return
	}
	snap := s.Snapshot()
	title := snap.State.Title
	if title == "" {
		title = "(untitled)"
	}
	c.say("opened %s %s: %d messages, model %s", s.ID(), title, snap.State.MessageCount, modelName(snap))
	c.showHistory(s)
	if note := c.sf.recoveryNote(s); note != "" {
		c.say("  %s", note)
	}
}

func (c *chat) listSessions() {
	cur := c.session()
	ws := cur.WorkspaceID()
	if c.sf.noSession {
		// An in-memory session belongs to no workspace: list the one of
		// its directory, if that is registered.
		c.say("(this session is kept in memory: --no-session)")
		ws = ""
		all, _ := c.e.Workspaces()
		for _, w := range all {
			if sameDir(w.Cwd, cur.Cwd()) {
				ws = w.ID
			}
		}
		if ws == "" {
			return
		}
	}
	list, err := c.e.List(ws, false)
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	if len(list) == 0 {
		c.say("no sessions with messages yet")
		return
	}
	var b strings.Builder
	for _, sum := range list {
		mark := " "
		if sum.ID == cur.ID() {
			mark = "*"
		}
		title := sum.Title
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "%s %s  %s  %s  %d messages\n", mark, sum.ID, time.UnixMilli(sum.UpdatedAt).Format("2006-01-02 15:04"), title, sum.MessageCount)
	}
	c.say("%s", strings.TrimRight(b.String(), "\n"))
}

func (c *chat) model(args []string) {
	s := c.session()
	if len(args) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "model: %s", modelName(s.Snapshot()))
		for _, m := range c.e.Models() {
			fmt.Fprintf(&b, "\n  %s/%s", m.Provider, m.ID)
			if len(m.Efforts) > 0 {
				fmt.Fprintf(&b, "  efforts: %s", strings.Join(m.Efforts, ", "))
			}
		}
		c.say("%s", b.String())
		return
	}
	ref, err := engine.ParseModelRef(args[0])
	if err != nil {
		c.say("  %v", err)
		return
	}
	var effort *string
	if len(args) > 1 {
		effort = &args[1]
	}
	snap, err := s.SetModel(ref, effort)
	if err != nil {
		c.say("  %s: %v", engine.CodeOf(err), err)
		return
	}
	c.say("model: %s", modelName(snap))
}

func (c *chat) queue(args []string) {
	s := c.session()
	items := s.Snapshot().State.Queue
	// delete drops an item; send releases a held one (an input a previous
	// process left comes back held: docs/protocol.md 8.6), as cancel-edit.
	if len(args) == 2 && (args[0] == "delete" || args[0] == "rm" || args[0] == "send") {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > len(items) {
			c.say("  no queued item %s", args[1])
			return
		}
		action, done := engine.QueueDelete, "deleted"
		if args[0] == "send" {
			action, done = engine.QueueCancelEdit, "released"
		}
		if _, err := s.Queue(engine.QueueAction{ID: items[n-1].ID, Action: action}); err != nil {
			c.say("  %s: %v", engine.CodeOf(err), err)
			return
		}
		c.say("%s %d", done, n)
		return
	}
	if len(args) != 0 {
		c.say("usage: /queue [delete N | send N]")
		return
	}
	if len(items) == 0 {
		c.say("the queue is empty")
		return
	}
	var b strings.Builder
	for i, it := range items {
		held := ""
		if it.Held {
			held = " (held)"
		}
		fmt.Fprintf(&b, "%d. %s%s\n", i+1, firstLine(it.Text, 100), held)
	}
	c.say("%s", strings.TrimRight(b.String(), "\n"))
}
