package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/loopdev/loop/engine"
)

// endSignals are the signals that end a process that does not handle
// them: a closed terminal or tmux pane (HUP), Ctrl-C (INT), kill (TERM)
// and Ctrl-\ (QUIT). loop run and loop chat catch all of them from before
// a result can exist until it is saved or written to its recovery file,
// so that none of them can end the process in between (docs/cli.md).
var endSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}

// signalStatus is the exit status after sig: 128 plus its number, as a
// shell reports a process the signal killed (130 for SIGINT).
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitInterrupted
}

// ending shuts the engine down once, however many paths end the process
// (the command returning, a signal): the first caller runs
// engine.Shutdown, later ones wait for it and get the same outcome, so
// two shutdowns never write recovery files side by side and nobody exits
// while one is being written.
type ending struct {
	e       *engine.Engine
	command string    // names the command on stderr
	stderr  io.Writer // where a result written to a recovery file is named
	before  func()    // runs once, before Shutdown (the terminal restored)

	once    sync.Once
	unsaved bool // some result could only be written to a recovery file
}

// finish shuts down in mode and returns code, or exitUnsaved when some
// result could only be written to a recovery file. An abort also stops
// what a drain already under way waits for, so that drain ends too.
func (x *ending) finish(mode engine.ShutdownMode, code int) int {
	if mode == engine.Abort {
		for _, s := range x.e.LiveSessions() {
			s.RequestAbort()
		}
	}
	x.once.Do(func() {
		if x.before != nil {
			x.before()
		}
		if err := x.e.Shutdown(context.Background(), mode); err != nil {
			printErrors(x.stderr, x.command, err)
			x.unsaved = true
		}
	})
	if x.unsaved {
		return exitUnsaved
	}
	return code
}

// printErrors writes err on stderr, one line per error errors.Join put
// in it (Shutdown joins one per session it could not save), each line
// naming the command.
func printErrors(w io.Writer, command string, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok && !isEngineError(err) {
		for _, e := range j.Unwrap() {
			printErrors(w, command, e)
		}
		return
	}
	fmt.Fprintf(w, "%s: %v\n", command, err)
}

func isEngineError(err error) bool {
	_, ok := err.(*engine.Error)
	return ok
}
