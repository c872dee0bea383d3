// Command loop serves Loop's JSON-RPC protocol on stdin and stdout.
//
// An editor spawns it as a subprocess, as it does a language server; a
// person can drive it through a pipe. stdout carries protocol frames only;
// every log line goes to stderr or --log-file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/rpc/wire"
	"github.com/loopdev/loop/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

const usage = `loop: a session engine for coding agents, speaking JSON-RPC on stdin/stdout.

Usage:
  loop [flags]                 serve JSON-RPC on stdin/stdout
  loop migrate [flags] FILE... convert pi session files (the legacy format); see loop migrate -h

Flags:
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "migrate" {
		return migrate(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("loop", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nThe protocol is documented in docs/protocol.md.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loop: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *showVer {
		fmt.Fprintf(stdout, "loop %s\n", version)
		return 0
	}
	fr, err := wire.ParseFraming(*framing)
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
	eng, err := engine.New(engine.Options{DataRoot: root, Demo: *demo, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "loop: %v\n", err)
		return 1
	}
	logger.Info("loop serving JSON-RPC on stdin/stdout", "version", version, "dataDir", root, "framing", fr.String(), "demo", *demo,
		"try", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"loop/1"}}`)

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
		return nil, nil, fmt.Errorf("--log-level: %v", err)
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
