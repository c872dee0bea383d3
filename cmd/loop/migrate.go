package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

const migrateUsage = `Usage: loop migrate [--data-dir DIR] [--cwd DIR] FILE...

Converts pi JSONL session files into Loop sessions of the workspace of their working
directory, registering it when needed. The files are not changed; migrating a file
again returns the same session. Prints one JSON line per file.

Flags:
`

// migrate converts legacy (pi) session files: an explicit open
// (docs/cli.md, "loop migrate"), from the command line, since protocol clients never name
// files.
func migrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop migrate", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	cwd := fs.String("cwd", "", "working directory for the sessions, instead of the one each file names")
	if code, done := parseFlags(fs, migrateUsage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "loop migrate: no FILE to migrate; Usage: loop migrate [--data-dir DIR] [--cwd DIR] FILE...")
		return 2
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "loop migrate: data root: %v\n", err)
		return 2
	}
	eng, err := engine.New(engine.Options{DataRoot: root, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintf(stderr, "loop migrate: %v\n", err)
		return 1
	}
	code := 0
	enc := jsonenc.NewEncoder(stdout)
	for _, path := range fs.Args() {
		m, err := eng.MigrateLegacy(path, *cwd)
		if err != nil {
			fmt.Fprintf(stderr, "loop migrate: %s: %v\n", path, err)
			code = 1
			continue
		}
		_ = enc.Encode(migratedLine{File: path, SessionID: m.SessionID, WorkspaceID: m.WorkspaceID, Cwd: m.Cwd, Messages: m.Messages})
	}
	return code
}

// migratedLine is the line loop migrate prints for each file it migrated
// (docs/cli.md).
type migratedLine struct {
	File        string `json:"file"`
	SessionID   string `json:"sessionId"`
	WorkspaceID string `json:"workspaceId"`
	Cwd         string `json:"cwd"`
	Messages    int    `json:"messageCount"`
}
