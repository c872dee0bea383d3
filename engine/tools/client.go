package tools

import "context"

// ClientFS serves file reads and writes from the front end instead of the
// local disk: an editor that advertises it (ACP's fs capability) answers
// with its buffers, unsaved changes included. Paths are absolute. The
// permission checks stay Loop's: they run before the client is asked.
type ClientFS interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// ClientTerminal runs bash commands in the front end's terminal (ACP's
// terminal capability), so the user sees them run.
type ClientTerminal interface {
	Run(ctx context.Context, req TerminalRequest, progress func(string)) (TerminalResult, error)
}

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
