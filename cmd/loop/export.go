package main

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

const exportUsage = `Usage: loop export [--data-dir DIR] [--format markdown|json] SESSION

Writes a saved session to stdout: markdown (default) for people, or json, Loop's exact
export, which loop import turns back into the session. SESSION is a session id, or the
path of a session's directory or header file (as --session of loop run).

Flags:
`

// exportCommand is loop export (docs/cli.md).
func exportCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop export", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	format := fs.String("format", engine.ExportMarkdown, "markdown or json")
	if code, done := parseFlags(fs, exportUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop export", stderr)
	if fs.NArg() != 1 {
		return fail(usagef("name one SESSION; Usage: loop export [--data-dir DIR] [--format markdown|json] SESSION"))
	}
	if *format != engine.ExportMarkdown && *format != engine.ExportJSON {
		return fail(usagef("--format must be markdown or json, not %q", *format))
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		return fail(usagef("data root: %v", err))
	}
	e, err := newEngine(root, newLineLogger(stderr, "loop export", slog.LevelError+4))
	if err != nil {
		return fail(err)
	}
	defer e.Shutdown(context.Background(), engine.Drain)
	s, err := openNamed(e, fs.Arg(0))
	if err != nil {
		return fail(classify(err))
	}
	out, err := s.Export(*format)
	if err != nil {
		return fail(classify(err))
	}
	if _, err := stdout.Write(out); err != nil {
		return fail(err)
	}
	return 0
}
