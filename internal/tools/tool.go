package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/sandbox"
)

// Tool is one capability the model can call.
type Tool interface {
	Name() string
	// Description is what the model reads about the tool.
	Description() string
	// Schema is the JSON Schema (an object) of the tool's arguments.
	Schema() json.RawMessage
	// Run executes a call. It validates args itself and reports bad
	// arguments as an IsError result, never a panic. progress (may be nil)
	// receives incremental output; bash streams its stdout/stderr chunks.
	// progress may be called from another goroutine, but never
	// concurrently with itself and never after Run returns.
	Run(ctx context.Context, env Env, args json.RawMessage, progress func(string)) Result
}

// Env is what a tool call runs against.
type Env struct {
	// Cwd is the workspace: relative paths resolve against it, bash runs
	// in it, and the confined presets keep file tools inside it.
	Cwd string
	// Preset is the session's permission preset; "" means read-only.
	Preset Preset

	// BashTimeout is the timeout of a bash call that names none (0: 120 s).
	BashTimeout time.Duration
	// BashMaxTimeout caps the timeout a call may ask for (0: 600 s).
	BashMaxTimeout time.Duration
	// BashOutputCap is how many bytes of bash output the result keeps, half
	// from the head and half from the tail (0: 64 KiB).
	BashOutputCap int
	// BashProgressCap is how many bytes of live output progress receives
	// before streaming stops with a note (0: 1 MiB).
	BashProgressCap int
	// KillGrace is the wait between SIGTERM and SIGKILL when a command is
	// aborted or times out (0: 2 s).
	KillGrace time.Duration
	// BashEnv is appended to the process environment of bash commands.
	BashEnv []string
	// HideEnv names variables of Loop's environment that bash commands
	// must not inherit: the ones holding provider keys. BashEnv may still
	// set them.
	HideEnv []string

	// Sandbox, when set, is the OS sandbox bash commands run in
	// (SandboxPolicy); nil runs them with the user's rights. A command
	// that cannot be sandboxed fails rather than run without it.
	Sandbox *sandbox.Policy
	// SandboxHelper is the loop binary that applies Sandbox to a command
	// the front end's Terminal runs; "" runs sandboxed commands here
	// instead of in the Terminal.
	SandboxHelper string

	// FS, when set, serves read, write and edit from the front end.
	FS ClientFS
	// Terminal, when set, runs bash in the front end's terminal.
	Terminal ClientTerminal

	// ToolOutput, when set, serves read of a path starting with
	// ToolOutputPrefix: the whole output of an earlier tool call of the
	// session, which the model got only the start and end of.
	ToolOutput func(path string) (string, bool)
}

// ToolOutputPrefix starts the paths Env.ToolOutput serves.
const ToolOutputPrefix = "loop:tool-output/"

// Defaults of Env's zero fields.
const (
	DefaultBashTimeout     = 120 * time.Second
	DefaultBashMaxTimeout  = 600 * time.Second
	DefaultBashOutputCap   = 64 << 10
	DefaultBashProgressCap = 1 << 20
	DefaultKillGrace       = 2 * time.Second
)

func (e Env) bashTimeout() time.Duration {
	if e.BashTimeout > 0 {
		return e.BashTimeout
	}
	return DefaultBashTimeout
}

func (e Env) bashMaxTimeout() time.Duration {
	if e.BashMaxTimeout > 0 {
		return e.BashMaxTimeout
	}
	return DefaultBashMaxTimeout
}

func (e Env) bashOutputCap() int {
	if e.BashOutputCap > 0 {
		return e.BashOutputCap
	}
	return DefaultBashOutputCap
}

func (e Env) bashProgressCap() int {
	if e.BashProgressCap > 0 {
		return e.BashProgressCap
	}
	return DefaultBashProgressCap
}

func (e Env) killGrace() time.Duration {
	if e.KillGrace > 0 {
		return e.KillGrace
	}
	return DefaultKillGrace
}

// Result is the outcome of one tool call.
type Result struct {
	// Content goes back to the model as the tool result.
	Content []convo.Block
	// IsError marks a failed call; the model sees Content either way.
	IsError bool
	// Details is structured data for front ends, never sent to the model:
	// "path" (absolute) and "diff" (unified) for write and edit, "exitCode"
	// and "truncated" for bash, "line" for the first line a call touched.
	Details map[string]any
}

// Text returns the concatenated text blocks of r.
func (r Result) Text() string {
	var s string
	for _, b := range r.Content {
		if b.Type == convo.BlockText {
			s += b.Text
		}
	}
	return s
}

func textResult(text string, details map[string]any) Result {
	return Result{Content: []convo.Block{{Type: convo.BlockText, Text: text}}, Details: details}
}

func errorResult(format string, a ...any) Result {
	return Result{Content: []convo.Block{{Type: convo.BlockText, Text: fmt.Sprintf(format, a...)}}, IsError: true}
}
