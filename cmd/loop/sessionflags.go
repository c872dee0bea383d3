package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// sessionFlags are the flags run and chat share (docs/cli.md "Sessions").
type sessionFlags struct {
	dataDir    string
	cwd        string
	cont       bool
	session    string
	fork       string // SESSION[@MESSAGECOUNT] (forkflag.go)
	noSession  bool
	model      string
	effort     string
	permission string
	demo       bool
}

func (f *sessionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "", "data root (default $LOOP_HOME, else $XDG_DATA_HOME/loop, else ~/.local/share/loop)")
	fs.StringVar(&f.cwd, "cwd", "", "the session's workspace directory (default: the current directory; registered as a workspace if needed)")
	fs.BoolVar(&f.cont, "continue", false, "continue the most recently active session of the workspace, else start one")
	fs.BoolVar(&f.cont, "c", false, "short for --continue")
	fs.StringVar(&f.session, "session", "", "open this session: an id, or the exact path of its directory or header.json")
	fs.StringVar(&f.fork, "fork", "", "start from a fork of this session: SESSION or SESSION@MESSAGECOUNT (default: its whole history)")
	fs.BoolVar(&f.noSession, "no-session", false, "keep the session in memory: nothing is written under the data root")
	fs.StringVar(&f.model, "model", "", "the model, as PROVIDER/ID (default: the configured default)")
	fs.StringVar(&f.effort, "effort", "", "effort: "+provider.JoinOr(engine.Efforts)+" (the model must support it)")
	fs.StringVar(&f.permission, "permission", "", "permission preset: read-only, workspace-write, ask or full-access (default: the configured one, else read-only for loop run and ask for loop chat)")
	fs.BoolVar(&f.demo, "demo", false, "add the built-in offline demo model")
}

// usageError is bad usage or configuration found before anything runs:
// exit status 2, one line on stderr.
type usageError struct{ msg string }

// failWith returns how a subcommand reports err: one line on stderr that
// names the command, and the exit status: 2 for bad usage or configuration
// found before anything ran (usageError), else 1 (docs/cli.md).
func failWith(command string, stderr io.Writer) func(error) int {
	return func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitRunError
	}
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// check rejects flag combinations before anything is opened.
func (f *sessionFlags) check() error {
	n := 0
	for _, set := range []bool{f.cont, f.session != "", f.fork != "", f.noSession} {
		if set {
			n++
		}
	}
	if n > 1 {
		return usagef("--continue, --session, --fork and --no-session exclude each other")
	}
	if f.model != "" {
		if _, err := engine.ParseModelRef(f.model); err != nil {
			return usagef("--model %q is not PROVIDER/ID", f.model)
		}
	}
	if f.cwd != "" {
		return checkDir(f.cwd)
	}
	return nil
}

func (f *sessionFlags) options() engine.SessionOptions {
	opts := engine.SessionOptions{Effort: f.effort, Permission: f.permission}
	if f.model != "" {
		ref, _ := engine.ParseModelRef(f.model)
		opts.Model = &ref
	}
	return opts
}

// host says what the command opening the engine needs of it.
type host struct {
	command string // names the command on stderr: "loop run"
	// noBackgroundTitles: the command exits with the answer (loop run),
	// so no session may start a title by itself (docs/cli.md).
	noBackgroundTitles bool
	// check, when set, runs once the engine is open and before the
	// session is opened or made: what it refuses makes nothing.
	check func(*engine.Engine) error
	// permission is the preset of a new session when neither
	// --permission nor config.json names one ("": read-only).
	permission string
}

// open makes the engine and opens the session the flags name; when the
// session cannot be had, the engine is shut down again.
func (f *sessionFlags) open(stderr io.Writer, h host) (*engine.Engine, *engine.Session, error) {
	e, err := f.openEngine(stderr, h)
	if err != nil {
		return nil, nil, err
	}
	if h.check != nil {
		if err := h.check(e); err != nil {
			_ = e.Shutdown(context.Background(), engine.Drain)
			return nil, nil, err
		}
	}
	s, err := f.openSession(e)
	if err != nil {
		_ = e.Shutdown(context.Background(), engine.Drain)
		return nil, nil, err
	}
	if rec := s.RecoveredOnOpen(); rec != nil {
		// A run a killed process left was saved by this open
		// (docs/protocol.md 9.1): say so once, before anything else.
		fmt.Fprintf(stderr, "%s: saved the interrupted run %s of session %s (%d messages; outcome interrupted): the process running it stopped before saving it\n",
			h.command, rec.RunID, s.ID(), rec.Messages)
	}
	if note := f.recoveryNote(s); note != "" {
		fmt.Fprintf(stderr, "%s: %s\n", h.command, note)
	}
	return e, s, nil
}

// recoveryNote is the line that names a recovery file waiting for s
// (state.recoveryFile) and the command that commits it, "" when none
// waits (docs/cli.md, "When the result cannot be saved").
func (f *sessionFlags) recoveryNote(s *engine.Session) string {
	path := s.Snapshot().State.RecoveryFile
	if path == "" {
		return ""
	}
	cmd := "loop import "
	if f.dataDir != "" {
		cmd += "--data-dir " + shellWord(f.dataDir) + " "
	}
	return fmt.Sprintf("session %s has an unsaved result waiting in %s: %s%s commits it", s.ID(), path, cmd, shellWord(path))
}

// shellWord is s as one word for a POSIX shell: as it is when that is
// safe, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// openEngine makes the engine over the data root; a configuration that
// cannot be used, or one without any model, is a usage error.
func (f *sessionFlags) openEngine(stderr io.Writer, h host) (*engine.Engine, error) {
	root, err := store.ResolveDataRoot(f.dataDir)
	if err != nil {
		return nil, usagef("data root: %v", err)
	}
	// Quiet while the configuration loads: a problem with it is said once,
	// below, as the one line a usage error gets. Warnings after that (an
	// MCP server that fails) go to stderr.
	level := new(slog.LevelVar)
	level.Set(slog.LevelError + 4)
	logger := newLineLogger(stderr, h.command, level)
	e, err := newEngine(root, logger, withDemo(f.demo), withoutBackgroundTitles(h.noBackgroundTitles), withDefaultPermission(h.permission), lettingGoWhenIdle)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if err := e.ConfigError(); err != nil {
		return nil, usagef("config_error: %v", err)
	}
	level.Set(slog.LevelWarn)
	if len(e.Models()) == 0 {
		return nil, usagef("no_provider: no model provider is configured: add one to %s, set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --demo", store.NewLayout(root).Config())
	}
	return e, nil
}

// openSession returns the session the flags name: in memory, by id or
// path, the workspace's most recent, or (default) a new persistent one.
func (f *sessionFlags) openSession(e *engine.Engine) (*engine.Session, error) {
	opts := f.options()
	var s *engine.Session
	var err error
	switch {
	case f.session != "":
		s, err = openNamed(e, f.session)
		if err == nil && f.cwd != "" && !sameDir(f.cwd, s.Cwd()) {
			return nil, usagef("--cwd %s: session %s works in %s (a session keeps its own directory)", f.cwd, s.ID(), s.Cwd())
		}
		if err == nil {
			_, err = s.ApplyOptions(opts)
		}
	case f.fork != "":
		s, err = f.openFork(e)
		if err == nil {
			_, err = s.ApplyOptions(opts)
		}
	case f.noSession:
		if err = e.CheckSessionOptions(opts); err == nil {
			var cwd string
			if cwd, err = f.workDir(); err == nil {
				s, err = e.NewInMemorySession(cwd, opts)
			}
		}
	default:
		if !f.cont {
			if err = e.CheckSessionOptions(opts); err != nil {
				break
			}
		}
		var cwd string
		if cwd, err = f.workDir(); err != nil {
			break
		}
		var ws engine.Workspace
		if ws, err = e.AddWorkspace(cwd, ""); err != nil {
			break
		}
		if f.cont {
			s, _, err = e.ContinueRecent(ws.ID, opts)
		} else {
			s, err = e.CreateSession(ws.ID, opts)
		}
	}
	if err != nil {
		return nil, classify(err)
	}
	// A session whose model is no longer configured cannot run at all.
	if snap := s.Snapshot(); snap.ModelInfo == nil {
		if snap.Model == nil {
			return nil, usagef("model_not_found: session %s has no model; choose one with --model", s.ID())
		}
		return nil, usagef("model_not_found: session %s uses %s/%s, which is not configured; choose another with --model", s.ID(), snap.Model.Provider, snap.Model.ID)
	}
	return s, nil
}

// openNamed opens the session a command line names: an id, any unique
// prefix of one, or the exact path of its directory or header.json
// (docs/cli.md). Not finding it is said in words about what was typed: a
// typo'd id is "no session", not a failed lstat of a file of that name.
func openNamed(e *engine.Engine, arg string) (*engine.Session, error) {
	if uuid.Validate(arg) != nil {
		id, err := sessionIDOf(e.Root(), arg)
		if err != nil {
			return nil, err
		}
		if id == "" {
			if _, err := os.Lstat(arg); errors.Is(err, fs.ErrNotExist) {
				return nil, usagef("%s: no session %q: no session id starts with it, and no file or directory has that name", engine.CodeSessionNotFound, arg)
			}
			return e.OpenPath(arg)
		}
		arg = id
	}
	s, err := e.Session(arg)
	// Only when no session has the id: one of a removed workspace, or of
	// an unknown format, keeps the engine's words for why.
	if errors.Is(err, store.ErrSessionNotFound) && !errors.Is(err, store.ErrUnsupportedFormat) {
		return nil, usagef("%s: no session %q in the data root %s", engine.CodeSessionNotFound, arg, e.Root().Dir())
	}
	return s, err
}

func (f *sessionFlags) workDir() (string, error) {
	if f.cwd != "" {
		return canonical(f.cwd)
	}
	return os.Getwd()
}

func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func canonical(dir string) (string, error) {
	if err := checkDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkDir checks the directory --cwd names, in words about what was
// typed (the *PathError of a failed stat would repeat it).
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--cwd %s: no such directory", dir)
	case err != nil:
		return usagef("--cwd %s: %v", dir, errors.Unwrap(err))
	case !fi.IsDir():
		return usagef("--cwd %s: not a directory", dir)
	}
	return nil
}

// usageCodes are the engine's refusals that mean the command line named
// something wrong; anything else (a disk failure, a locked session) is a
// failure of the run (exit status 1).
var usageCodes = map[engine.Code]bool{
	engine.CodeInvalidParams: true, engine.CodeSessionNotFound: true, engine.CodeWorkspaceNotFound: true,
	engine.CodeModelNotFound: true, engine.CodeNoProvider: true, engine.CodeInvalidModelEffort: true,
	engine.CodeInvalidTextFiles: true, engine.CodeInvalidImages: true, engine.CodeConfigError: true,
	engine.CodeModelImagesUnsupported: true,
}

// classify turns an engine error into a usage error when it is one.
func classify(err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	code := engine.CodeOf(err)
	if usageCodes[code] {
		return usagef("%s: %v", code, err)
	}
	return err
}

// describe is err as one line for a person: a usage error as it says
// itself, anything else after its stable code.
func describe(err error) string {
	err = classify(err)
	var ue *usageError
	if errors.As(err, &ue) {
		return err.Error()
	}
	return fmt.Sprintf("%s: %v", engine.CodeOf(err), err)
}
