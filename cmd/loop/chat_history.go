package main

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tui"
)

// What the chat shows of other conversations: the one it opens (-c,
// --session, /open, the picker) as it was so far, and the picker's list
// of sessions with its full-text search (docs/cli.md "loop chat").

// showHistory shows the conversation so far of s: the user's prompts,
// the answers (Markdown) and the tool calls with their outcome.
func (c *chat) showHistory(s *engine.Session) {
	msgs := s.SnapshotFrom(0).State.Messages
	if len(msgs) == 0 {
		return
	}
	c.ui.Send(tui.Transcript{Items: transcript(msgs)})
}

func transcript(msgs []convo.Message) []tui.Item {
	var items []tui.Item
	calls := map[string]int{} // a call's item, by its id
	for _, m := range msgs {
		switch m.Role {
		case convo.RoleUser:
			if t := m.Text(); strings.TrimSpace(t) != "" {
				items = append(items, tui.Item{Role: "user", Text: t})
			}
		case convo.RoleAssistant:
			var text strings.Builder
			for _, b := range m.Content {
				if b.Type == convo.BlockText {
					text.WriteString(b.Text)
				}
			}
			if strings.TrimSpace(text.String()) != "" {
				items = append(items, tui.Item{Role: "assistant", Text: text.String()})
			}
			for _, b := range m.Content {
				if b.Type == convo.BlockToolCall {
					calls[b.ID] = len(items)
					items = append(items, tui.Item{Role: "tool", Text: toolSummary(b.Name, b.Arguments), OK: true})
				}
			}
		case convo.RoleToolResult:
			if i, ok := calls[m.ToolCallID]; ok {
				items[i].OK = !m.IsError
			}
		}
	}
	return items
}

// maxPreviews bounds how many untitled sessions the picker reads the
// first message of, a read each.
const maxPreviews = 200

// pick opens the session picker on every session, newest first.
func (c *chat) pick() {
	c.ui.Send(tui.Pick{Items: c.Search("")})
}

// Search is the picker's list: every session with messages (the
// independent chats too), newest first; with a query, the sessions
// whose saved messages match it, best first (the search index).
func (c *chat) Search(query string) []tui.PickItem {
	dirs := map[string]string{}
	scopes := []string{""}
	home, _ := os.UserHomeDir()
	if wss, err := c.e.Workspaces(); err == nil {
		for _, w := range wss {
			dirs[w.ID] = w.Cwd
			if rel, err := filepath.Rel(home, w.Cwd); home != "" && err == nil && !strings.HasPrefix(rel, "..") {
				dirs[w.ID] = filepath.Join("~", rel)
			}
			scopes = append(scopes, w.ID)
		}
	}
	all := map[string]tui.PickItem{}
	previews := 0
	var order []tui.PickItem
	for _, ws := range scopes {
		list, err := c.e.List(ws, false)
		if err != nil {
			continue
		}
		for _, sum := range list {
			if sum.MessageCount == 0 {
				continue
			}
			it := tui.PickItem{ID: sum.ID, Title: sum.Title, Updated: time.UnixMilli(sum.UpdatedAt), Messages: sum.MessageCount}
			if it.Title == "" && previews < maxPreviews {
				// No title: the first message says what it was about.
				previews++
				if first, err := c.e.Root().ReadMessages(ws, sum.ID, 0, 1); err == nil && len(first) == 1 {
					it.Title = first[0].Text()
				}
			}
			if sum.WorkspaceID != nil {
				it.Workspace = dirs[*sum.WorkspaceID]
			}
			all[sum.ID] = it
			order = append(order, it)
		}
	}
	if query == "" {
		sort.SliceStable(order, func(i, j int) bool { return order[i].Updated.After(order[j].Updated) })
		return order
	}
	res, err := c.e.Search(context.Background(), engine.SearchOptions{Query: query, All: true, Limit: 100})
	if err != nil {
		return nil
	}
	var hits []tui.PickItem
	seen := map[string]bool{}
	for _, h := range res.Hits {
		if seen[h.SessionID] {
			continue
		}
		seen[h.SessionID] = true
		it, ok := all[h.SessionID]
		if !ok {
			it = tui.PickItem{ID: h.SessionID, Title: h.Title, Updated: time.UnixMilli(h.UpdatedAt)}
		}
		it.Snippet = h.Snippet
		hits = append(hits, it)
	}
	return hits
}

// chatCommandNames are the slash commands chatHelp lists, for Tab
// completion: the table of commands is that one text.
func chatCommandNames() []string {
	var names []string
	for _, l := range strings.Split(chatHelp, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && strings.HasPrefix(f[0], "/") {
			names = append(names, f[0])
		}
	}
	return names
}
