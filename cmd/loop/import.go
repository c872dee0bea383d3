package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

const importUsage = `Usage: loop import [--data-dir DIR] [--cwd DIR] FILE...

Brings session files in as new Loop sessions, with their original times and titles:
Loop JSON exports, pi JSONL sessions, Claude Code transcripts (JSONL) and Codex rollouts
(JSONL), the format told from the content. A directory is searched recursively for files
of those formats. The files are not changed; importing one again imports nothing twice.
Each session joins the workspace of --cwd, else of the directory its source names, else of
the current directory. One JSON line per session on stdout, progress on stderr.

A recovery file (the unsaved result a save refused at exit left, named on stderr then)
goes into its own session instead: what the session's history lacks of it is committed,
once; a session that went on without it gets a copy with it as a new session.

Flags:
`

const migrateUsage = `Usage: loop migrate [--data-dir DIR] [--cwd DIR] FILE...

An alias of loop import (loop import -h), kept for pi session files.

Flags:
`

// importCommand is loop import and its alias loop migrate (docs/cli.md):
// an explicit open, from the command line, of files no protocol client
// names.
func importCommand(name, usage string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	cwd := fs.String("cwd", "", "the directory whose workspace the sessions join, instead of the one each source names")
	if code, done := parseFlags(fs, usage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: no FILE to import; Usage: %s [--data-dir DIR] [--cwd DIR] FILE...\n", name, name)
		return exitUsage
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: data root: %v\n", name, err)
		return exitUsage
	}
	if *cwd != "" && !store.CwdExists(*cwd) {
		fmt.Fprintf(stderr, "%s: --cwd %s is not a directory\n", name, *cwd)
		return exitUsage
	}
	eng, err := newEngine(root, newLineLogger(stderr, name, slog.LevelWarn))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitRunError
	}
	// A recovery file opens its session in the engine: shutting down
	// closes it (and its trace) before the process exits.
	defer eng.Shutdown(context.Background(), engine.Drain)
	here, _ := os.Getwd()
	enc := jsonenc.NewEncoder(stdout)
	n := 0
	tot, err := eng.Import(context.Background(), fs.Args(), engine.ImportOptions{
		Cwd: *cwd, Fallback: here,
		Progress: func(r engine.ImportResult) {
			n++
			switch {
			case r.Skipped:
				fmt.Fprintf(stderr, "%s: [%d] skipped %v\n", name, n, r.Err)
			case r.Err != nil && r.Format == store.RecoveryFormat:
				// Refused like a write to the session: the code says why
				// (session_locked, busy, pending_save, ...).
				fmt.Fprintf(stderr, "%s: %s: %v\n", name, engine.CodeOf(r.Err), r.Err)
			case r.Err != nil:
				fmt.Fprintf(stderr, "%s: %v\n", name, r.Err)
			default:
				what := "imported"
				if r.Existed {
					what = "already imported"
				}
				note := ""
				if r.Note != "" {
					note = ": " + r.Note
				}
				fmt.Fprintf(stderr, "%s: [%d] %s: %s as %s (%s, %d messages)%s\n", name, n, r.File, what, r.SessionID, r.Format, r.Messages, note)
				_ = enc.Encode(importedLine{File: r.File, Format: r.Format, SessionID: r.SessionID, WorkspaceID: scopeOf(r.WorkspaceID), Cwd: r.Cwd, Messages: r.Messages, Existed: r.Existed})
			}
		},
	})
	fmt.Fprintf(stderr, "%s: %d imported, %d already imported, %d skipped, %d failed\n", name, tot.Imported, tot.Existed, tot.Skipped, tot.Failed)
	if err != nil || tot.Failed > 0 {
		return exitRunError
	}
	return 0
}

// importedLine is the line loop import prints for each session a file
// became (docs/cli.md).
type importedLine struct {
	File        string  `json:"file"`
	Format      string  `json:"format"`
	SessionID   string  `json:"sessionId"`
	WorkspaceID *string `json:"workspaceId"` // null: an independent chat
	Cwd         string  `json:"cwd"`
	Messages    int     `json:"messageCount"`
	Existed     bool    `json:"existed"`
}

// scopeOf is a workspace id on the wire: null for an independent chat.
func scopeOf(workspaceID string) *string {
	if workspaceID == "" {
		return nil
	}
	return &workspaceID
}
