// Command loop serves Loop's JSON-RPC protocol on stdin and stdout (loop
// serve; plain loop when an editor spawns it), holds a chat in the
// terminal (loop chat; plain loop typed at a terminal), and runs prompts
// from the command line (loop run, loop -p).
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
	"strings"
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

// command is one subcommand: its name, how --help shows it, and its
// entry point. Every entry point calls parseFlags before anything else
// (flagsOf relies on it).
type command struct {
	name     string
	synopsis string // after "loop ": "run [flags] [PROMPT...]"
	summary  string // one line, or several joined by \n
	// words are the fixed words it takes where a shell completes them
	// ("schema", "ts"); nil: files.
	words []string
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are the subcommands, in the order loop --help lists them. A
// function, not a variable: completion and help read the table they are
// entries of.
func commands() []command {
	return []command{
		{name: "run", synopsis: "run [flags] [PROMPT...]", summary: "one prompt, the answer on stdout (\"print mode\"; loop -p is the same)", run: runCommand},
		{name: "chat", synopsis: "chat [flags] [PROMPT...]", summary: "an interactive chat in the terminal, with slash commands", run: chatCommand},
		{name: "serve", synopsis: "serve [flags]", summary: "serve JSON-RPC on stdin/stdout (editors, programs); flags below", run: serveCommand},
		{name: "sessions", synopsis: "sessions [flags]", summary: "past sessions, newest first", run: sessionsCommand},
		{name: "models", synopsis: "models [flags]", summary: "the configured models", run: modelsCommand},
		{name: "search", synopsis: "search [flags] QUERY", summary: "full-text search over past sessions", run: searchCommand},
		{name: "export", synopsis: "export [flags] SESSION", summary: "a saved session to stdout, as markdown or Loop's JSON", run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
			return exportCommand(args, stdout, stderr)
		}},
		{name: "import", synopsis: "import [flags] FILE...", summary: "sessions from Loop JSON exports, pi, Claude Code, Codex;\na recovery file back into its session", run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
			return importCommand("loop import", importUsage, args, stdout, stderr)
		}},
		{name: "migrate", synopsis: "migrate [flags] FILE...", summary: "an alias of import, kept for pi session files", run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
			return importCommand("loop migrate", migrateUsage, args, stdout, stderr)
		}},
		{name: "replay", synopsis: "replay [flags] SESSION", summary: "re-run a traced session against its recorded answers", run: replayCommand},
		{name: "protocol", synopsis: "protocol schema|ts", summary: "the protocol as a JSON Schema or TypeScript, for client authors", words: []string{"schema", "ts"}, run: protocolCommand},
		{name: "completion", synopsis: "completion bash|zsh|fish", summary: "a shell completion script (source it from the shell's startup file)", words: shells, run: completionCommand},
		{name: "version", synopsis: "version", summary: "the version (as loop -v, loop --version)", words: []string{}, run: versionCommand},
		{name: "help", synopsis: "help [COMMAND]", summary: "this text, or a command's flags (as loop COMMAND -h)", run: helpCommand},
	}
}

// lookup finds the subcommand called name.
func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage is loop --help: every command, then the flags of the server.
func usage() string {
	var b strings.Builder
	b.WriteString("loop: a session engine for coding agents.\n\nUsage:\n")
	line := func(synopsis, summary string) {
		for i, l := range strings.Split(summary, "\n") {
			if i > 0 {
				synopsis = ""
			}
			fmt.Fprintf(&b, "  %-31s %s\n", synopsis, l)
		}
	}
	line("loop [flags] [PROMPT...]", "on a terminal, the chat (as loop chat); else the JSON-RPC\nserver an editor spawns (as loop serve)")
	line("loop -p [flags] PROMPT...", "one prompt, the answer on stdout (as loop run)")
	for _, c := range commands() {
		line("loop "+c.synopsis, c.summary)
	}
	b.WriteString(`
Flags may stand anywhere among the words (loop run hi --output json); -- ends them.

Examples:
  loop                          # a chat in this directory (on a terminal)
  loop "why does the build fail?"   # a chat, with a first prompt
  loop -p "What does this repository do?"
  git diff | loop run "review this"
  loop chat -c                  # continue this directory's last session, interactively
  loop serve --demo             # the protocol, with the offline demo model

docs/cli.md describes the commands, docs/protocol.md the protocol.

Flags of the server (loop serve, and plain loop without a terminal):
`)
	return b.String()
}

// initializeExample is the hint's first request, one line, ready to paste.
const initializeExample = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"loop/1"}}`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if c, ok := lookup(args[0]); ok {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	return plain(args, stdin, stdout, stderr)
}

// plain is loop without a subcommand (docs/cli.md): -h, -v and -p first,
// wherever they stand; then the chat when stdin and stdout are terminals
// (a person typed loop), else the server (an editor spawned it).
func plain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// -p is looked for among run's flags, which are a superset of chat's:
	// a value that happens to read -p is not taken for it.
	runCmd, _ := lookup("run")
	runFlags := flagsOf(runCmd)
	_, _, flags := splitArgs(runFlags, args)
	for _, i := range flags {
		if name, _ := flagName(args[i]); name == "p" || name == "print" {
			rest := append(append([]string{}, args[:i]...), args[i+1:]...)
			return runCommand(rest, stdin, stdout, stderr)
		}
	}
	for _, i := range flags {
		switch name, _ := flagName(args[i]); name {
		case "h", "help":
			return serve("loop", usage(), []string{"-h"}, stdin, stdout, stderr)
		case "v", "version":
			return versionCommand(nil, stdin, stdout, stderr)
		}
	}
	if !isTerminal(stdin) || !isTerminal(stdout) {
		return serve("loop", usage(), args, stdin, stdout, stderr)
	}
	// A flag only the server has, typed at a terminal, was meant for it.
	serveCmd, _ := lookup("serve")
	chatCmd, _ := lookup("chat")
	serverFlags, chatFlags := flagsOf(serveCmd), flagsOf(chatCmd)
	_, _, cflags := splitArgs(chatFlags, args)
	for _, i := range cflags {
		name, _ := flagName(args[i])
		name, _, _ = strings.Cut(name, "=")
		if serverFlags.Lookup(name) != nil && chatFlags.Lookup(name) == nil {
			fmt.Fprintf(stderr, "loop: --%s is a flag of the server, and on a terminal loop opens the chat: run loop serve --%s (see loop --help)\n", name, name)
			return exitUsage
		}
	}
	return chatCommand(args, stdin, stdout, stderr)
}

// helpCommand is loop help [COMMAND].
func helpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop help", flag.ContinueOnError)
	if code, done := parseFlags(fs, "Usage: loop help [COMMAND]\n\nThe overview of the commands, or a command's help (as loop COMMAND -h).\n", args, stdout, stderr); done {
		return code
	}
	switch fs.NArg() {
	case 0:
		return serve("loop", usage(), []string{"-h"}, stdin, stdout, stderr)
	case 1:
		if c, ok := lookup(fs.Arg(0)); ok {
			return c.run([]string{"-h"}, stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "loop help: no command %q (see loop --help)\n", strings.Join(fs.Args(), " "))
	return exitUsage
}

// versionCommand is loop version, loop -v and loop --version.
func versionCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop version", flag.ContinueOnError)
	if code, done := parseFlags(fs, "Usage: loop version\n\nPrints the version of this binary (as loop -v and loop --version).\n", args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loop version: unexpected argument %q (see loop version -h)\n", fs.Arg(0))
		return exitUsage
	}
	fmt.Fprintf(stdout, "loop %s\n", buildVersion())
	return exitOK
}

const serveUsage = `Usage: loop serve [flags]

Serves Loop's JSON-RPC protocol on stdin and stdout, whatever they are connected to: the
native protocol (docs/protocol.md), or the Agent Client Protocol with --acp (docs/acp.md).
Plain loop does the same when stdin or stdout is not a terminal, as when an editor spawns
it. stdout carries protocol frames only; logs go to stderr or --log-file.

Flags:
`

// serveCommand is loop serve: the server, even at a terminal.
func serveCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return serve("loop serve", serveUsage, args, stdin, stdout, stderr)
}

// serve is the JSON-RPC server: loop serve, and plain loop without a
// terminal. name and help are how the command was called.
func serve(name, help string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
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
	fs.BoolVar(showVer, "v", false, "short for --version")
	if code, done := parseFlags(fs, help, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: no command %q (see loop --help)\n", name, fs.Arg(0))
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
