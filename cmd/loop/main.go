// Command loop serves Loop's JSON-RPC protocol on stdin and stdout, and
// runs prompts from the command line (loop run).
//
// An editor spawns it as a subprocess, as it does a language server; a
// person can drive it through a pipe. stdout carries protocol frames only;
// every log line goes to stderr or --log-file. docs/cli.md describes the
// commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/store"
)

func main() {
	// The sandbox helper (an editor's terminal runs sandboxed commands
	// through it: docs/acp.md) is checked first and does nothing else.
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg {
		os.Exit(sandbox.RunHelper(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `loop: a session engine for coding agents.

Usage:
  loop [flags]                  serve JSON-RPC on stdin/stdout (editors, programs); flags below
  loop run [flags] [PROMPT...]  one prompt, the answer on stdout ("print mode")
  loop chat [flags]             an interactive chat in the terminal, with slash commands
  loop search [flags] QUERY     full-text search over past sessions
  loop export [flags] SESSION   a saved session to stdout, as markdown or Loop's JSON
  loop import [flags] FILE...   sessions from Loop JSON exports, pi, Claude Code, Codex;
                                a recovery file back into its session
  loop migrate [flags] FILE...  an alias of import, kept for pi session files
  loop replay [flags] SESSION   re-run a traced session against its recorded answers
  loop protocol schema|ts       the protocol as a JSON Schema or TypeScript, for client authors
  loop help [COMMAND]           this text, or a command's flags (as loop COMMAND -h)

Examples:
  echo "What does this repository do?" | loop run
  git diff | loop run "review this"
  loop chat -c                  # continue this directory's last session, interactively
  loop --demo                   # the protocol, with the offline demo model

docs/cli.md describes the commands, docs/protocol.md the protocol.

Flags of the server:
`

// initializeExample is the hint's first request, one line, ready to paste.
const initializeExample = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"loop/1"}}`

// subcommands maps each subcommand to its entry point.
var subcommands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"run":    runCommand,
	"chat":   chatCommand,
	"replay": replayCommand,
	"export": func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return exportCommand(args, stdout, stderr)
	},
	"import": func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return importCommand("loop import", importUsage, args, stdout, stderr)
	},
	"search":   searchCommand,
	"protocol": protocolCommand,
	"migrate": func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return importCommand("loop migrate", migrateUsage, args, stdout, stderr)
	},
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if cmd, ok := subcommands[args[0]]; ok {
			return cmd(args[1:], stdin, stdout, stderr)
		}
		if args[0] == "help" {
			if len(args) > 1 {
				if cmd, ok := subcommands[args[1]]; ok {
					return cmd([]string{"-h"}, stdin, stdout, stderr)
				}
				fmt.Fprintf(stderr, "loop help: no command %q (see loop --help)\n", args[1])
				return 2
			}
			args = []string{"-h"}
		}
	}
	return serve(args, stdin, stdout, stderr)
}

// serve is plain loop: the JSON-RPC server.
func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop", flag.ContinueOnError)
	var (
		dataDir  = fs.String("data-dir", "", "data root (default $LOOP_HOME, else $XDG_DATA_HOME/loop, else ~/.local/share/loop)")
		framing  = fs.String("framing", "auto", "input framing: auto, lsp (Content-Length headers) or ndjson (one JSON object per line)")
		onEOF    = fs.String("on-eof", "drain", "at stdin EOF: drain (let running work finish) or abort")
		logFile  = fs.String("log-file", "", "write logs to this file instead of stderr")
		logLevel = fs.String("log-level", "info", "log level: debug, info, warn or error")
		demo     = fs.Bool("demo", false, "add the built-in offline demo model")
		acpMode  = fs.Bool("acp", false, "speak the Agent Client Protocol (Zed and other ACP editors); plain loop switches to it when initialize carries an integer protocolVersion")
		showVer  = fs.Bool("version", false, "print the version and exit")
	)
	if code, done := parseFlags(fs, usage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loop: no command %q (see loop --help)\n", fs.Arg(0))
		return 2
	}
	version := buildVersion()
	if *showVer {
		fmt.Fprintf(stdout, "loop %s\n", version)
		return 0
	}
	fr, err := rpc.ParseFraming(*framing)
	if err != nil {
		fmt.Fprintf(stderr, "loop: --framing: %v\n", err)
		return 2
	}
	mode := engine.Drain
	switch *onEOF {
	case "drain":
	case "abort":
		mode = engine.Abort
	default:
		fmt.Fprintf(stderr, "loop: --on-eof must be drain or abort, not %q\n", *onEOF)
		return 2
	}
	logger, closeLog, err := newLogger(*logFile, *logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "loop: %v\n", err)
		return 2
	}
	defer closeLog()

	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "loop: data root: %v\n", err)
		return 2
	}
	eng, err := newEngine(root, logger, withDemo(*demo))
	if err != nil {
		fmt.Fprintf(stderr, "loop: %v\n", err)
		return 1
	}
	defer returnMemoryAfterRuns(eng)()
	logger.Info("loop serving JSON-RPC on stdin/stdout", "version", version, "dataDir", root, "framing", fr.String(), "demo", *demo)
	if isTerminal(stdin) {
		// A person at a terminal (make run): a request to paste as printed,
		// and after each reply the next one, its ids filled in.
		fmt.Fprintf(stderr, "loop: paste a JSON-RPC request and press enter, for example:\n%s\n", initializeExample)
		stdout = newPasteGuide(stdout, stderr)
	}

	// A client that goes away mid-write must not kill the process before
	// it has saved: writes to a closed stdout fail with EPIPE instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal shuts down cleanly; a second one kills at once.
		<-ctx.Done()
		stop()
	}()
	srv := rpc.NewServer(eng, rpc.Options{Framing: fr, OnEOF: mode, Version: version, Logger: logger, ACP: *acpMode})
	if err := srv.Serve(ctx, stdin, stdout); err != nil {
		// Some result could only be written to a recovery file.
		fmt.Fprintf(stderr, "loop: %v\n", err)
		return 2
	}
	return 0
}

func newLogger(path, level string, stderr io.Writer) (*slog.Logger, func(), error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: must be debug, info, warn or error", level)
	}
	w, closeFn := stderr, func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), closeFn, nil
}
