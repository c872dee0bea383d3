package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/search"
)

const searchUsage = `Usage: loop search [flags] [--cwd DIR | --global | --all] QUERY...

Searches what was said in past sessions: user and assistant text (tool results with
--include-tools), of the workspace of the current directory (or --cwd DIR), the independent
chats (--global) or everything (--all). The query is the arguments joined by spaces: words,
and "quoted phrases" (quote them for the shell too: '"fix the test"'). Every word and
phrase must occur in a message; case is ignored (Unicode case folding). Flags go before
the query.

Prints one hit per line, best first: session id, #message index, role, when the session
was last updated, its title, and the text around the match. --json prints the
session/search result instead (docs/protocol.md).

Exit status: 0 some hit, 1 no hit, 2 bad usage, an unknown workspace or a failure.

Flags:
`

func searchCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop search", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	cwd := fs.String("cwd", "", "search the workspace of this directory (default: the current directory)")
	global := fs.Bool("global", false, "search the independent chats")
	all := fs.Bool("all", false, "search every workspace and the independent chats")
	limit := fs.Int("limit", search.DefaultLimit, fmt.Sprintf("hits to show, 1 to %d", search.MaxLimit))
	cursor := fs.String("cursor", "", "continue after an earlier page (the nextCursor of --json)")
	tools := fs.Bool("include-tools", false, "search tool results too")
	archived := fs.Bool("archived", false, "search archived sessions instead of the others")
	asJSON := fs.Bool("json", false, "print the session/search result as JSON")
	if code, done := parseFlags(fs, searchUsage, args, stdout, stderr); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "loop search: "+format+"\n", a...)
		return exitUsage
	}
	n := 0
	for _, set := range []bool{*cwd != "", *global, *all} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fail("give at most one of --cwd, --global and --all")
	}
	if *limit < 1 || *limit > search.MaxLimit {
		return fail("--limit %d: must be 1 to %d", *limit, search.MaxLimit)
	}
	if *cwd != "" {
		if err := checkDir(*cwd); err != nil {
			return fail("%v", err)
		}
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return fail("no QUERY (see loop search -h)")
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		return fail("data root: %v", err)
	}
	eng, err := newEngine(root, newLineLogger(stderr, "loop search", slog.LevelWarn))
	if err != nil {
		return fail("%v", err)
	}
	o := engine.SearchOptions{Query: query, All: *all, Limit: *limit, Cursor: *cursor, IncludeTools: *tools, Archived: *archived}
	if !*all && !*global {
		dir := *cwd
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return fail("current directory: %v", err)
			}
		}
		ws, found, err := workspaceOf(eng, dir)
		if err != nil {
			return fail("%v", err)
		}
		if !found {
			fmt.Fprintf(stderr, "loop search: no workspace is registered for %s (try --all)\n", dir)
			return 1
		}
		o.WorkspaceID = ws
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := eng.Search(ctx, o)
	if err != nil {
		return fail("%v", err)
	}
	if *asJSON {
		_ = jsonenc.NewEncoder(stdout).Encode(rpc.SearchResultOf(res))
	} else {
		for _, h := range res.Hits {
			fmt.Fprintln(stdout, hitLine(h))
		}
		if res.NextCursor != "" {
			fmt.Fprintf(stderr, "loop search: more hits: --cursor %s\n", res.NextCursor)
		}
	}
	if len(res.Hits) == 0 {
		return 1
	}
	return exitOK
}

// workspaceOf finds the registered workspace of dir (symlinks resolved,
// as the registry stores it) without registering one.
func workspaceOf(eng *engine.Engine, dir string) (string, bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	wss, err := eng.Workspaces()
	if err != nil {
		return "", false, err
	}
	for _, w := range wss {
		if w.Cwd == abs {
			return w.ID, true, nil
		}
	}
	return "", false, nil
}

// hitLine is a hit for a person: where it is, then the text around it.
func hitLine(h engine.SearchHit) string {
	title := h.Title
	if title == "" {
		title = "(untitled)"
	}
	when := time.UnixMilli(h.UpdatedAt).Local().Format("2006-01-02 15:04")
	return fmt.Sprintf("%s #%d %s %s %q: %s", h.SessionID, h.MessageIndex, h.Role, when, title, h.Snippet)
}
