package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/store"
)

const sessionsUsage = `Usage: loop sessions [flags] [--cwd DIR | --global | --all]

Lists past sessions, newest first: the sessions of the workspace of the current
directory (or --cwd DIR), the independent chats (--global) or everything (--all).
One line each: the id, when it was last active, its messages, its workspace, and its
title, else the start of its first message. Any unique prefix of an id opens it
(loop chat --session 01a2f3, loop export 01a2f3). --json prints one object,
{"sessions": [...]}, each entry as session/list gives it (docs/protocol.md) with its
"cwd" and "preview".

Exit status: 0 listed (also when there is nothing to list); 2 bad usage or a failure.

Flags:
`

// sessionEntry is one line of loop sessions, and one entry of its json.
type sessionEntry struct {
	rpc.SessionSummary
	// Cwd is the workspace's directory; "" for an independent chat.
	Cwd string `json:"cwd"`
	// Preview is the first user message's first line, shortened, for a
	// session without a title; "" otherwise.
	Preview string `json:"preview"`
}

// sessionsCommand is loop sessions (docs/cli.md).
func sessionsCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop sessions", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	cwd := fs.String("cwd", "", "list the sessions of the workspace of this directory (default: the current directory)")
	global := fs.Bool("global", false, "list the independent chats")
	all := fs.Bool("all", false, "list every workspace's sessions and the independent chats")
	archived := fs.Bool("archived", false, "list archived sessions instead of the others")
	asJSON := fs.Bool("json", false, `print {"sessions": [...]} as JSON`)
	if code, done := parseFlags(fs, sessionsUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop sessions", stderr)
	if fs.NArg() > 0 {
		return fail(usagef("unexpected argument %q (see loop sessions -h)", fs.Arg(0)))
	}
	if n := countTrue(*cwd != "", *global, *all); n > 1 {
		return fail(usagef("give at most one of --cwd, --global and --all"))
	}
	if *cwd != "" {
		if err := checkDir(*cwd); err != nil {
			return fail(err)
		}
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		return fail(usagef("data root: %v", err))
	}
	e, err := newEngine(root, newLineLogger(stderr, "loop sessions", slog.LevelWarn))
	if err != nil {
		return fail(usagef("%v", err))
	}
	defer e.Shutdown(context.Background(), engine.Drain)
	wss, err := e.Workspaces()
	if err != nil {
		return fail(usagef("%v", err))
	}
	cwdOf := map[string]string{}
	for _, w := range wss {
		cwdOf[w.ID] = w.Cwd
	}
	var scopes []string // workspace ids; "" is the independent chats
	switch {
	case *all:
		for _, w := range wss {
			scopes = append(scopes, w.ID)
		}
		scopes = append(scopes, "")
	case *global:
		scopes = []string{""}
	default:
		dir := *cwd
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return fail(usagef("current directory: %v", err))
			}
		}
		ws, found, err := workspaceOf(e, dir)
		if err != nil {
			return fail(usagef("%v", err))
		}
		if !found {
			fmt.Fprintf(stderr, "loop sessions: no workspace is registered for %s, so it has no sessions (try --all)\n", dir)
		} else {
			scopes = []string{ws}
		}
	}
	var list []engine.Summary
	for _, ws := range scopes {
		page, err := e.List(ws, *archived)
		if err != nil {
			return fail(usagef("%v", err))
		}
		list = append(list, page...)
	}
	// Newest first across scopes, as session/list orders one.
	slices.SortFunc(list, func(a, b engine.Summary) int {
		if c := cmp.Compare(b.UpdatedAt, a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	entries := make([]sessionEntry, 0, len(list))
	for i := range list {
		s := &list[i]
		en := sessionEntry{SessionSummary: rpc.SessionSummaryOf(s)}
		if s.WorkspaceID != nil {
			en.Cwd = cwdOf[*s.WorkspaceID]
		}
		if s.Title == "" {
			en.Preview = firstMessagePreview(e.Root(), s)
		}
		entries = append(entries, en)
	}
	if *asJSON {
		_ = jsonenc.NewEncoder(stdout).Encode(map[string]any{"sessions": entries})
		return exitOK
	}
	writeSessions(stdout, entries, time.Now())
	return exitOK
}

// firstMessagePreview is the first line of the session's first user
// message, shortened: what stands for the title of a session without one.
func firstMessagePreview(root *store.Root, s *engine.Summary) string {
	ws := ""
	if s.WorkspaceID != nil {
		ws = *s.WorkspaceID
	}
	n := min(s.MessageCount, 4)
	msgs, err := root.ReadMessages(ws, s.ID, 0, n)
	if err != nil {
		return ""
	}
	for _, m := range msgs {
		if m.Role == convo.RoleUser {
			if t := strings.TrimSpace(m.Text()); t != "" {
				return firstLine(t, 60)
			}
		}
	}
	return ""
}

// writeSessions prints entries as aligned columns, with a heading.
func writeSessions(w io.Writer, entries []sessionEntry, now time.Time) {
	if len(entries) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTIVE\tMESSAGES\tWORKSPACE\tTITLE")
	home, _ := os.UserHomeDir()
	for _, en := range entries {
		title := en.Title
		if title == "" {
			title = "(untitled)"
			if en.Preview != "" {
				title = fmt.Sprintf("%q", en.Preview)
			}
		}
		where := "(independent)"
		if en.Cwd != "" {
			where = tildePath(en.Cwd, home)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", en.ID, age(now, en.UpdatedAt), en.MessageCount, where, oneLine(title))
	}
	_ = tw.Flush()
}

// age is how long ago ms (Unix milliseconds) was, in its largest unit.
func age(now time.Time, ms int64) string {
	d := now.Sub(time.UnixMilli(ms))
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02")
}

// tildePath is path with the home directory written ~.
func tildePath(path, home string) string {
	if home != "" && home != "/" {
		if rel, err := filepath.Rel(home, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if rel == "." {
				return "~"
			}
			return "~/" + rel
		}
	}
	return path
}

// oneLine keeps a title on its line: tabs and line breaks become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
