package tools

import "context"

// ClientFS serves file reads and writes from the front end instead of the
// local disk: an editor that advertises it (ACP's fs capability) answers
// with its buffers, unsaved changes included. Paths are absolute. The
// permission checks stay Loop's: they run before the client is asked.
// An operation the front end does not serve returns ErrNotServed, and the
// tool uses the disk (clientfs.go says what else stays on disk).
type ClientFS interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// ClientTerminal runs bash commands in the front end's terminal (ACP's
// terminal capability), so the user sees them run.
//
// Run runs req.Command, a shell command line, in req.Cwd with req.Env
// ("NAME=value") added, and waits for it to end. When ctx is cancelled
// (the run stopped, or bash's timeout passed) it kills the command and
// returns what it printed so far with ctx's error. The output keeps at most
// req.OutputByteLimit bytes, dropping the start; Truncated says so.
// progress (may be nil) takes live output if the implementation has any.
// ErrNotServed (nothing run) makes bash run the command locally.
type ClientTerminal interface {
	Run(ctx context.Context, req TerminalRequest, progress func(string)) (TerminalResult, error)
}

// Shell is the program bash runs command lines with locally (/bin/bash,
// or /bin/sh where there is none), as `Shell -c line`. A client terminal
// that takes a program and its arguments is given the same, so that a line
// means there what it means here.
func Shell() string { return shellPath() }

// TerminalRequest is one command for a client terminal.
type TerminalRequest struct {
	Command         string
	Cwd             string
	Env             []string
	OutputByteLimit int
}

// TerminalResult is how a client terminal's command ended.
type TerminalResult struct {
	Output    string
	ExitCode  *int
	Signal    string
	Truncated bool
}
