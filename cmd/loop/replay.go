package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/regfile"
	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

const replayUsage = `Usage: loop replay [flags] SESSION|TRACE_DIR

Re-runs a traced session from its first prompt, in a scratch data directory,
against a model that answers from the trace: each request the replay makes is
compared with the recorded one, byte for byte (after the scratch workspace's
path and today's date are put back to the recorded ones), and the first that
differs is shown as a diff. Nothing goes to the network; no key is needed.
SESSION is a session id of the data root; TRACE_DIR is a trace directory
(docs/traces.md), e.g. one attached to a bug report.

Tool calls get the results the trace recorded, unless --tools runs them again
in a scratch copy of the session's working directory (every call allowed).
The configuration the trace recorded applies (models and their limits,
compaction, titles), so that a trace replays alike wherever it is replayed;
the data root's config.json gives the MCP servers, and everything for a trace
written before Loop recorded its configuration.

Exit status: 0 every request matched (and, for a SESSION, the replayed history
equals the saved one); 1 the replay diverged; 2 bad usage, or no trace that
can be replayed. docs/cli.md has the details.

Flags:
`

// maxConfigBytes bounds the data root's config.json as replay reads it:
// the engine's own bound.
const maxConfigBytes = engine.MaxConfigBytes

func replayCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("loop replay", flag.ContinueOnError)
	dataDir := fl.String("data-dir", "", "data root (default $LOOP_HOME, else $XDG_DATA_HOME/loop, else ~/.local/share/loop)")
	runTools := fl.Bool("tools", false, "run the tools again in a scratch copy of the working directory instead of answering them from the trace")
	if code, done := parseFlags(fl, replayUsage, args, stdout, stderr); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "loop replay: "+format+"\n", a...)
		return exitUsage
	}
	if fl.NArg() != 1 {
		return fail("want one SESSION or TRACE_DIR (see loop replay -h)")
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		return fail("data root: %v", err)
	}
	dir, original, err := findTrace(root, fl.Arg(0))
	if err != nil {
		return fail("%v", err)
	}
	t, err := trace.Read(dir)
	if err != nil {
		return fail("%v", err)
	}
	rp, err := trace.NewReplayer(t)
	if err != nil {
		return fail("%s: %v", dir, err)
	}
	rep := &replay{root: root, t: t, rp: rp, tools: *runTools, stderr: stderr}
	defer rep.cleanup()
	if err := rep.setup(); err != nil {
		return fail("%v", err)
	}
	if err := rep.run(); err != nil {
		return fail("%v", err)
	}
	if d := rp.Finish(); d != nil {
		fmt.Fprintf(stdout, "replay diverged after %s\n", plural(rp.Made(), "identical request"))
		fmt.Fprint(stdout, d.Describe())
		return exitRunError
	}
	fmt.Fprintf(stdout, "replay identical: %s, %s as recorded\n", plural(len(rp.Steps), "step"), plural(rp.Made(), "model request"))
	if original != nil {
		// The replayed history is a snapshot's, whose tool call ids are
		// the session-unique ones clients get (docs/storage.md, "Tool
		// call ids"); the saved one is given the same.
		publishToolCallIDs(original)
		n := min(len(original), len(rep.history))
		if i, why := compareHistory(original[:n], rep.history); why != "" {
			fmt.Fprintf(stdout, "history differs at message %d: %s\n", i, why)
			return exitRunError
		}
		if n < len(original) {
			// Every request matched, and the replayed history is the
			// start of the saved one: the trace lost the session's last
			// steps whole, which no record of it can tell.
			fmt.Fprintf(stdout, "history identical up to message %d of %d\n", n, len(original))
			return fail("%s: the trace is incomplete: the session's history goes on after its last step (message %d of %d): its last records never reached the disk (the process was killed within a second of them, or its disk stayed full), or the session went on while traces were off", dir, n, len(original))
		}
		fmt.Fprintf(stdout, "history identical: %s\n", plural(len(original), "message"))
	}
	return exitOK
}

// findTrace resolves the argument: a trace directory, or a session id whose
// trace is under the data root. For a session it also returns the saved
// history to compare the replay with.
func findTrace(root, arg string) (string, []convo.Message, error) {
	if trace.IsDir(arg) {
		return arg, nil, nil
	}
	if _, err := uuid.Parse(arg); err != nil {
		id := ""
		if r, rerr := store.OpenRoot(root); rerr == nil {
			if id, err = sessionIDOf(r, arg); err != nil {
				return "", nil, err
			}
		}
		if id == "" {
			return "", nil, fmt.Errorf("%s is neither a trace directory nor a session id (or the start of one)", arg)
		}
		arg = id
	}
	layout := store.NewLayout(root)
	scopes, _ := os.ReadDir(layout.Traces())
	for _, sc := range scopes {
		ws := store.ScopeWorkspace(sc.Name())
		dir := layout.Trace(ws, arg)
		if !trace.IsDir(dir) {
			continue
		}
		var msgs []convo.Message
		if r, err := store.OpenRoot(root); err == nil {
			if h, err := r.ReadHeader(ws, arg); err == nil {
				msgs, _ = r.ReadMessages(ws, arg, 0, h.MessageCount)
			}
		}
		return dir, msgs, nil
	}
	return "", nil, fmt.Errorf("session %s has no trace under %s", arg, layout.Traces())
}

type replay struct {
	root    string
	t       *trace.Trace
	rp      *trace.Replayer
	tools   bool
	stderr  io.Writer
	scratch string
	data    string       // the scratch data root
	cwd     string       // the replay's working directory
	session atomic.Value // string: the replaying session's id, once made
	clock   atomic.Int64 // the recorded time of the step being replayed (Unix ms), 0 before the first
	e       *engine.Engine
	history []convo.Message
}

func (r *replay) cleanup() {
	if r.e != nil {
		_ = r.e.Shutdown(context.Background(), engine.Abort)
	}
	if r.scratch != "" {
		_ = os.RemoveAll(r.scratch)
	}
}

// setup makes the scratch data root: the data root's config.json with the
// traced providers pointed at the trace, and the working directory.
func (r *replay) setup() error {
	var err error
	if r.scratch, err = os.MkdirTemp("", "loop-replay-"); err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	data := filepath.Join(r.scratch, "data")
	r.data = data
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("scratch data root: %w", err)
	}
	if err := r.writeConfig(r.rp.Configs[0]); err != nil {
		return err
	}
	// Global skills expand into prompts that name them, as the data
	// root's own do.
	if skills := store.NewLayout(r.root).Skills(); isDir(skills) {
		if err := copyTree(skills, store.NewLayout(data).Skills()); err != nil {
			return fmt.Errorf("scratch copy of %s: %w", skills, err)
		}
	}
	hdr := r.t.Header()
	r.cwd = hdr.Cwd
	switch {
	case r.tools:
		r.cwd = filepath.Join(r.scratch, "workspace")
		if err := copyTree(hdr.Cwd, r.cwd); err != nil {
			return fmt.Errorf("scratch copy of %s: %w", hdr.Cwd, err)
		}
	case !isDir(hdr.Cwd):
		r.cwd = filepath.Join(r.scratch, "workspace")
		if err := os.MkdirAll(r.cwd, 0o700); err != nil {
			return fmt.Errorf("scratch workspace: %w", err)
		}
	}
	r.rp.Normalize = func(body []byte, rec *trace.RecordedCall) []byte {
		if r.cwd != hdr.Cwd {
			body = bytes.ReplaceAll(body, jsonString(r.cwd), jsonString(hdr.Cwd))
		}
		// Requests name their session (OpenAI's prompt_cache_key).
		if id, _ := r.session.Load().(string); id != "" && hdr.SessionID != "" {
			body = bytes.ReplaceAll(body, jsonString(id), jsonString(hdr.SessionID))
		}
		// The date the model is told comes from the engine's clock, which
		// reads each step's recorded time (answers).
		return body
	}
	if r.e, err = newEngine(data, newLineLogger(r.stderr, "loop replay", slog.LevelWarn), r.answers); err != nil {
		return err
	}
	if err := r.e.ConfigError(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if r.tools {
		r.e.SetApprover(allowAll{})
	}
	return nil
}

// answers makes the engine ask the trace: the model's requests go to the
// replayer, no provider key of this machine is read, and unless the tools
// run again, every tool call is answered with its recorded result.
func (r *replay) answers(o *engine.Options) {
	o.Getenv = func(string) string { return "" }
	// The engine's clock is the recorded one: the context the model is told
	// (its date, docs/storage.md "Context blocks") is as it was.
	o.Now = func() time.Time {
		if t := r.clock.Load(); t != 0 {
			return time.UnixMilli(t)
		}
		return time.Now()
	}
	o.HTTPClient = &http.Client{Transport: r.rp}
	if r.tools {
		return
	}
	o.ToolResults = func(_, id, _ string, _ json.RawMessage) (engine.ToolResult, bool) {
		rec, ok := r.rp.Tool(id)
		if !ok {
			return engine.ToolResult{IsError: true, Content: []convo.Block{{Type: convo.BlockText, Text: "replay: the trace has no result for this tool call"}}}, true
		}
		return engine.ToolResult{Content: trace.StoreBlocks(rec.Result), IsError: rec.IsError}, true
	}
}

// writeConfig writes the scratch root's config.json for the configuration
// a trace recorded (nil: none recorded).
func (r *replay) writeConfig(recorded json.RawMessage) error {
	cfg, err := replayConfig(recorded, store.NewLayout(r.root).Config(), r.rp.Calls())
	if err != nil {
		return err
	}
	if err := os.WriteFile(store.NewLayout(r.data).Config(), cfg, 0o600); err != nil {
		return fmt.Errorf("scratch config: %w", err)
	}
	return nil
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) []byte {
	b, _ := jsonenc.Marshal(s)
	return b[1 : len(b)-1]
}

type allowAll struct{}

func (allowAll) Ask(context.Context, engine.ApprovalRequest) (string, error) {
	return engine.DecisionAllowedOnce, nil
}

// run replays every step in order, stopping at the first divergence.
func (r *replay) run() error {
	ctx := context.Background()
	ws, err := r.e.AddWorkspace(r.cwd, "")
	if err != nil {
		return err
	}
	first := r.rp.Steps[0]
	opts := engine.SessionOptions{Effort: first.Effort, Permission: first.Permission}
	if first.Model != "" {
		opts.Model = &engine.ModelRef{Provider: first.Provider, ID: first.Model}
	}
	s, err := r.e.CreateSession(ws.ID, opts)
	if err != nil {
		return err
	}
	r.session.Store(s.ID())
	for i, step := range r.rp.Steps {
		if r.rp.Divergence() != nil {
			break
		}
		if i > 0 && !bytes.Equal(r.rp.Configs[i], r.rp.Configs[i-1]) {
			// The session's configuration was reloaded before this step.
			if err := r.writeConfig(r.rp.Configs[i]); err != nil {
				return err
			}
			if err := r.e.ReloadConfig(ctx); err != nil {
				return fmt.Errorf("replay the configuration of step %d: %w", i+1, err)
			}
		}
		if err := r.align(s, step); err != nil {
			return err
		}
		r.clock.Store(step.T)
		switch step.Type {
		case trace.TypePrompt:
			in := engine.PromptInput{RequestID: step.RequestID}
			if step.Input != nil {
				in.Text, in.Skills = step.Input.Text, step.Input.Skills
				for _, raw := range step.Input.Images {
					var img engine.Image
					_ = json.Unmarshal(raw, &img)
					in.Images = append(in.Images, img)
				}
				for _, raw := range step.Input.Files {
					var f engine.File
					_ = json.Unmarshal(raw, &f)
					in.Files = append(in.Files, f)
				}
			}
			if _, err := s.Prompt(in); err != nil {
				return fmt.Errorf("replay prompt %s: %w", step.RequestID, err)
			}
		case trace.TypeResume:
			if _, err := s.Resume(); err != nil {
				return fmt.Errorf("replay resume: %w", err)
			}
		case trace.TypeCompact:
			if _, err := s.Compact(ctx); err != nil && r.rp.Divergence() == nil {
				fmt.Fprintf(r.stderr, "loop replay: compaction: %v\n", err)
			}
		case trace.TypeTitle:
			if _, err := s.GenerateTitle(ctx); err != nil && r.rp.Divergence() == nil {
				fmt.Fprintf(r.stderr, "loop replay: title: %v\n", err)
			}
		}
		if err := s.Wait(ctx); err != nil {
			return err
		}
		s.WaitForTitle()
	}
	r.history = s.Snapshot().State.Messages
	return nil
}

// align gives the session the model, effort and permission the step ran
// with.
func (r *replay) align(s *engine.Session, step trace.Record) error {
	if step.Type == trace.TypeCompact || step.Type == trace.TypeTitle {
		return nil
	}
	snap := s.Snapshot()
	if step.Model != "" && (snap.Model == nil || snap.Model.Provider != step.Provider || snap.Model.ID != step.Model || snap.Effort != step.Effort) {
		effort := step.Effort
		if _, err := s.SetModel(engine.ModelRef{Provider: step.Provider, ID: step.Model}, &effort); err != nil {
			return fmt.Errorf("model %s/%s: %w", step.Provider, step.Model, err)
		}
	}
	if step.Permission != "" && snap.State.PermissionPreset != step.Permission {
		if _, err := s.SetPermission(step.Permission); err != nil {
			return fmt.Errorf("permission %s: %w", step.Permission, err)
		}
	}
	return nil
}

// replayConfig is config.json for the scratch root: the configuration the
// trace recorded, with the user's MCP servers (a replay runs no command a
// trace names), or the user's whole config.json for a trace that recorded
// none; traces on, and each traced provider reaching the trace at its
// recorded base URL with no key, no credential headers, and every model it
// was called with.
func replayConfig(recorded json.RawMessage, path string, calls []*trace.RecordedCall) ([]byte, error) {
	user := map[string]json.RawMessage{}
	data, err := regfile.Read(path, maxConfigBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read config %s: %w", path, err)
	default:
		if err := json.Unmarshal(data, &user); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	top := user
	if recorded != nil {
		top = nil
		if err := json.Unmarshal(recorded, &top); err != nil {
			return nil, fmt.Errorf("the trace's config record: %w", err)
		}
		if top == nil {
			return nil, errors.New("the trace's config record is null, not an object")
		}
		for _, k := range []string{"mcpServers", "workspaces"} {
			if v, ok := user[k]; ok {
				top[k] = v
			}
		}
	}
	providers := map[string]map[string]any{}
	if raw, ok := top["providers"]; ok {
		_ = json.Unmarshal(raw, &providers)
	}
	out := map[string]map[string]any{}
	for _, c := range calls {
		name := c.Call.Provider
		p := out[name]
		if p == nil {
			p = providers[name]
			if p == nil {
				p = map[string]any{}
			}
			delete(p, "apiKeyEnv")
			delete(p, "headers")
			p["api"] = c.Call.API
			out[name] = p
		}
		// Requests never leave the process (the trace answers them); the
		// base URL only has to be one.
		p["baseUrl"] = "http://replay.invalid"
		if len(c.Attempts) > 0 {
			u := c.Attempts[0].Request.URL
			for _, path := range []string{"/chat/completions", "/responses", "/messages"} {
				u = strings.TrimSuffix(u, path)
			}
			if pu, err := url.Parse(u); err == nil && pu.IsAbs() {
				p["baseUrl"] = u
			}
		}
		models, _ := p["models"].([]any)
		found := false
		for _, m := range models {
			if mm, ok := m.(map[string]any); ok && mm["id"] == c.Call.Model {
				found = true
			}
		}
		if !found {
			p["models"] = append(models, map[string]any{"id": c.Call.Model})
		}
	}
	pb, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	top["providers"] = pb
	top["traces"] = json.RawMessage(`{"enabled":true}`)
	return json.MarshalIndent(top, "", "  ")
}

// compareHistory compares the replayed history with the saved one, by what
// the model and the user saw (timestamps aside).
func compareHistory(saved, replayed []convo.Message) (int, string) {
	for i := range min(len(saved), len(replayed)) {
		a, b := saved[i], replayed[i]
		if a.Role != b.Role {
			return i, fmt.Sprintf("role %s, replayed %s", a.Role, b.Role)
		}
		if a.Text() != b.Text() {
			return i, fmt.Sprintf("text %q, replayed %q", a.Text(), b.Text())
		}
		if len(a.Content) != len(b.Content) {
			return i, fmt.Sprintf("%d blocks, replayed %d", len(a.Content), len(b.Content))
		}
		for j := range a.Content {
			x, y := a.Content[j], b.Content[j]
			if x.Type != y.Type || x.Name != y.Name || x.ID != y.ID || !bytes.Equal(x.Arguments, y.Arguments) {
				return i, fmt.Sprintf("block %d differs", j)
			}
		}
	}
	if len(saved) != len(replayed) {
		return min(len(saved), len(replayed)), fmt.Sprintf("%d messages saved, %d replayed", len(saved), len(replayed))
	}
	return 0, ""
}

// publishToolCallIDs gives the tool calls and results of a history read
// from disk the ids a snapshot of it carries.
func publishToolCallIDs(history []convo.Message) {
	var ids store.ToolCallIDs
	for i := range history {
		ids.Add(&history[i])
	}
	store.PublishIDs(history, 0, ids.Renamed())
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// copyTree copies the regular files and directories of src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			mode := fs.FileMode(0o600)
			if info != nil {
				mode = info.Mode().Perm()
			}
			return os.WriteFile(target, data, mode)
		}
		return nil
	})
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
