package main

import (
	"log/slog"
	"os"

	"github.com/loopdev/loop/engine"
)

// engineOption adds to an engine what only some commands want.
type engineOption func(*engine.Options)

// newEngine builds the engine of every command of the binary, over the
// data root the command resolved (store.ResolveDataRoot: each command
// reports a bad --data-dir in its own words) and logging to logger. What
// every engine of the binary shares is set here.
func newEngine(root string, logger *slog.Logger, with ...engineOption) (*engine.Engine, error) {
	opts := engine.Options{DataRoot: root, Logger: logger}
	// This binary is the sandbox helper of commands an editor's terminal
	// runs (internal/sandbox.HelperArg).
	if self, err := os.Executable(); err == nil {
		opts.SandboxHelper = self
	}
	for _, w := range with {
		w(&opts)
	}
	return engine.New(opts)
}

// withDemo adds the built-in offline demo model when on (--demo).
func withDemo(on bool) engineOption {
	return func(o *engine.Options) { o.Demo = on }
}

// withoutBackgroundTitles keeps every session from starting a title by
// itself when on: for a command that exits with the answer (loop run).
func withoutBackgroundTitles(on bool) engineOption {
	return func(o *engine.Options) { o.NoBackgroundTitles = on }
}

// lettingGoWhenIdle lets another process continue a session while this
// command has nothing to write to it (loop run, loop chat: docs/cli.md,
// "Two terminals, one conversation").
func lettingGoWhenIdle(o *engine.Options) { o.LetGoWhenIdle = true }

// withDefaultPermission is the preset of new sessions when config.json
// names none ("": read-only): "ask" for the interactive chat.
func withDefaultPermission(preset string) engineOption {
	return func(o *engine.Options) { o.DefaultPermission = preset }
}
