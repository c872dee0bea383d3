package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/store"
)

// The ways a host gets a session, besides the drafts NewSession makes for
// the JSON-RPC server (docs/sdk.md has the table):
//
//	NewInMemorySession  empty history that never touches the data root
//	CreateSession       an empty persistent session, written at once
//	ContinueRecent      the workspace's most recently active session, else a new one
//	OpenPath            the session in exactly this directory (or header.json)
//	Session             a session by id
//
// The command line uses these; the server keeps drafts, whose first file
// is written only with the first user message.

// SessionOptions choose a session's model, effort and permission preset.
// Zero fields keep the defaults of a new session (docs/configuration.md
// "Defaults for new sessions") or the settings of an opened one. Unlike
// Session.SetModel, a model chosen here is not remembered for later
// sessions: a one-off flag must not change what the next session gets.
type SessionOptions struct {
	Model      *ModelRef
	Effort     string
	Permission string
}

// ParseModelRef reads PROVIDER/ID. The id may hold slashes itself
// (openrouter's deepseek/deepseek-r1); the provider name may not.
func ParseModelRef(s string) (ModelRef, error) {
	p, id, ok := strings.Cut(s, "/")
	if !ok || p == "" || id == "" {
		return ModelRef{}, errorf(CodeInvalidParams, "model %q is not PROVIDER/ID", s)
	}
	return ModelRef{Provider: p, ID: id}, nil
}

// CheckSessionOptions validates opts for a new session without creating
// one, so a front end can refuse a bad flag before anything runs:
// no_provider, model_not_found, invalid_model_effort or invalid_params.
func (e *Engine) CheckSessionOptions(opts SessionOptions) error {
	_, _, _, err := e.sessionSettings(opts)
	return err
}

// sessionSettings returns a new session's model, effort and preset with
// opts applied over the defaults.
func (e *Engine) sessionSettings(opts SessionOptions) (ModelRef, string, string, error) {
	if err := checkOptionNames(opts); err != nil {
		return ModelRef{}, "", "", err
	}
	ref, effort, err := e.newSessionModel()
	if err != nil {
		return ModelRef{}, "", "", err
	}
	cat := e.catalog()
	m, _ := cat.find(ref)
	if opts.Model != nil {
		var ok bool
		if m, ok = cat.find(*opts.Model); !ok {
			return ModelRef{}, "", "", errorf(CodeModelNotFound, "no model %s/%s is configured", opts.Model.Provider, opts.Model.ID)
		}
		ref = *opts.Model
		if !m.supportsEffort(effort) {
			effort = EffortDefault
		}
	}
	if opts.Effort != "" {
		if !m.supportsEffort(opts.Effort) {
			return ModelRef{}, "", "", errorf(CodeInvalidModelEffort, "model %s/%s does not support effort %q", ref.Provider, ref.ID, opts.Effort)
		}
		effort = opts.Effort
	}
	perm := opts.Permission
	if perm == "" {
		perm = e.defaultPermission()
	}
	return ref, effort, perm, nil
}

func checkOptionNames(opts SessionOptions) error {
	if opts.Effort != "" && !slices.Contains(Efforts, opts.Effort) {
		return errorf(CodeInvalidModelEffort, "effort %q is not one of %s", opts.Effort, strings.Join(Efforts, ", "))
	}
	if opts.Permission != "" {
		if _, err := tools.ParsePreset(opts.Permission); err != nil {
			return wrapError(CodeInvalidParams, err, "permission")
		}
	}
	return nil
}

// NewInMemorySession makes a session with empty history in cwd (an
// existing directory) that never writes anything under the data root: not
// at its commits, not for its metadata. It belongs to no workspace and is
// never listed; Session(id) finds it while it lives.
func (e *Engine) NewInMemorySession(cwd string, opts SessionOptions) (*Session, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	ref, effort, perm, err := e.sessionSettings(opts)
	if err != nil {
		return nil, err
	}
	dir, err := existingDir(cwd)
	if err != nil {
		return nil, err
	}
	st := store.InMemory(dir)
	if err := st.SaveMeta(func(h *store.Header) {
		h.Model = clonePtr(&ref)
		h.Effort, h.Permission = effort, perm
		h.Budget = e.defaultBudget()
	}); err != nil {
		return nil, storageError(err, "in-memory session")
	}
	return e.register(newSession(e, st)), nil
}

// CreateSession makes an empty persistent session in the workspace ("" for
// an independent chat, with its own private working directory): its
// directory and header are written at once, with its settings, so it opens
// from the next process before its first prompt and its metadata changes
// are saved as they happen. Lists leave it out until it holds a user
// message, as they do drafts. Besides the command line, front ends whose
// clients run one process per command (ACP's acpx: new, set-mode, prompt)
// use it.
func (e *Engine) CreateSession(workspaceID string, opts SessionOptions) (*Session, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	ws, err := e.checkScope(workspaceID)
	if err != nil {
		return nil, err
	}
	ref, effort, perm, err := e.sessionSettings(opts)
	if err != nil {
		return nil, err
	}
	cwd := ws.Cwd
	if workspaceID == "" {
		if cwd, err = e.root.NewPrivateCwd(); err != nil {
			return nil, storageError(err, "private working directory")
		}
	}
	st, err := e.root.CreateWith(workspaceID, cwd, func(h *store.Header) {
		h.Model = clonePtr(&ref)
		h.Effort, h.Permission = effort, perm
		h.Budget = e.defaultBudget()
	})
	if err != nil {
		return nil, storageError(err, "create session")
	}
	return e.register(newSession(e, st)), nil
}

// ContinueRecent returns the most recently active unarchived session of
// the workspace (empty ones included), or creates one when it has none;
// created says which. opts are applied to either (see ApplyOptions).
func (e *Engine) ContinueRecent(workspaceID string, opts SessionOptions) (s *Session, created bool, err error) {
	if _, err := e.checkScope(workspaceID); err != nil {
		return nil, false, err
	}
	if err := checkOptionNames(opts); err != nil {
		return nil, false, err
	}
	id, found, err := e.root.MostRecent(workspaceID)
	if err != nil {
		return nil, false, storageError(err, "find the most recent session")
	}
	if !found {
		s, err := e.CreateSession(workspaceID, opts)
		return s, err == nil, err
	}
	if s, err = e.Session(id); err != nil {
		return nil, false, err
	}
	if _, err := s.ApplyOptions(opts); err != nil {
		return nil, false, err
	}
	return s, false, nil
}

// OpenPath opens the session stored in exactly this directory of the
// data root, or the one whose header.json this is. It never searches: any
// other path, a session of another data root included, is refused.
func (e *Engine) OpenPath(path string) (*Session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, wrapError(CodeInvalidParams, err, "session path %q", path)
	}
	if store.IsSessionHeader(abs) {
		abs = filepath.Dir(abs)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		// The *PathError would name the path again, made absolute.
		return nil, &Error{Code: CodeSessionNotFound, Message: fmt.Sprintf("no session at %s: no such file or directory", path), Causes: []error{err}}
	}
	if err != nil {
		return nil, wrapError(CodeSessionNotFound, err, "no session at %s", path)
	}
	sessions, err := filepath.EvalSymlinks(e.root.Layout().Sessions())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Code: CodeSessionNotFound, Message: fmt.Sprintf("no session at %s: the data root %s holds no sessions", path, e.root.Dir()), Causes: []error{err}}
	}
	if err != nil {
		return nil, wrapError(CodeSessionNotFound, err, "no session at %s", path)
	}
	rel, err := filepath.Rel(sessions, dir)
	parts := strings.Split(rel, string(filepath.Separator))
	if err != nil || len(parts) != 2 || parts[0] == ".." || parts[0] == "." {
		return nil, errorf(CodeInvalidParams, "%s is not a session directory of the data root %s", path, e.root.Dir())
	}
	scope, id := parts[0], parts[1]
	if _, err := uuid.Parse(id); err != nil {
		return nil, errorf(CodeInvalidParams, "%s is not a session directory: %q is not a session id", path, id)
	}
	if _, err := os.Stat(store.SessionHeader(dir)); err != nil {
		return nil, wrapError(CodeSessionNotFound, err, "no session at %s", path)
	}
	s, err := e.Session(id)
	if err != nil {
		return nil, err
	}
	if s.workspaceID != store.ScopeWorkspace(scope) {
		return nil, errorf(CodeSessionNotFound, "session %s is not the one stored at %s", id, path)
	}
	return s, nil
}

// ApplyOptions saves the options given (model, effort, permission) in the
// session's header, checked against the session's model; zero options
// change nothing and write nothing. The choice is not remembered for new
// sessions. It needs an idle, saved session.
func (s *Session) ApplyOptions(opts SessionOptions) (_ *Snapshot, err error) {
	if opts == (SessionOptions{}) {
		return s.Snapshot(), nil
	}
	if err := checkOptionNames(opts); err != nil {
		return nil, err
	}
	h := s.st.Header()
	var ref ModelRef
	switch {
	case opts.Model != nil:
		ref = *opts.Model
	case h.Model != nil:
		ref = *h.Model
	}
	cat := s.e.catalog()
	m, ok := cat.find(ref)
	if !ok && (opts.Model != nil || opts.Effort != "") {
		if len(cat.models) == 0 {
			return nil, errorf(CodeNoProvider, "no model provider is configured")
		}
		return nil, errorf(CodeModelNotFound, "no model %s/%s is configured", ref.Provider, ref.ID)
	}
	effort := h.Effort
	switch {
	case opts.Effort != "":
		if !m.supportsEffort(opts.Effort) {
			return nil, errorf(CodeInvalidModelEffort, "model %s/%s does not support effort %q", ref.Provider, ref.ID, opts.Effort)
		}
		effort = opts.Effort
	case opts.Model != nil && (effort == "" || !m.supportsEffort(effort)):
		effort = EffortDefault
	}
	c, err := s.beginCommand(OpModel, kindSavedCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	err = s.saveMeta(func(h *store.Header) {
		if opts.Model != nil {
			h.Model = clonePtr(&ref)
		}
		h.Effort = effort
		if opts.Permission != "" {
			h.Permission = opts.Permission
		}
	})
	c.release()
	if err != nil {
		return nil, err
	}
	s.publishState()
	return s.Snapshot(), nil
}

// register makes s one of the engine's live sessions.
func (e *Engine) register(s *Session) *Session {
	e.mu.Lock()
	e.sessions[s.id] = s
	e.mu.Unlock()
	return s
}

// existingDir returns the absolute form of dir after checking that it is
// an existing directory.
func existingDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", wrapError(CodeInvalidParams, err, "cwd %q", dir)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", errorf(CodeInvalidParams, "cwd %s does not exist", abs)
	case err != nil:
		return "", wrapError(CodeInvalidParams, err, "cwd %s", abs)
	case !fi.IsDir():
		return "", errorf(CodeInvalidParams, "cwd %s is not a directory", abs)
	}
	return abs, nil
}

// ValidatePrompt checks a submission as Prompt would (request id, text,
// attachments, without the session's model or skills), so a front end can
// reject bad input before it creates a session.
func ValidatePrompt(in PromptInput) error {
	if in.RequestID == "" {
		in.RequestID = "check"
	}
	return validatePrompt(&in)
}

// ImageType is the MIME type of an image a prompt may attach, read from
// its leading bytes (PNG, JPEG, WebP or GIF), "" for anything else: what
// an Image's MimeType must say (ValidatePrompt).
func ImageType(data []byte) string { return sniffImage(data) }

// NewSessionModel is the model a session made now with opts would use:
// opts.Model, else preferences.json's remembered model, else config.json's
// default (docs/configuration.md). The errors are CheckSessionOptions's.
func (e *Engine) NewSessionModel(opts SessionOptions) (Model, error) {
	ref, _, _, err := e.sessionSettings(opts)
	if err != nil {
		return Model{}, err
	}
	m, _ := e.catalog().find(ref)
	return m, nil
}
