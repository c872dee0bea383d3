package engine

import (
	"context"
	"sync"

	"github.com/loopdev/loop/store"
)

// Runtime owns one current session and replaces it (docs/sdk.md, "Replacing
// the active session"), as a terminal front or an SDK host needs: newSession,
// switchSession, a rebind callback, dispose. Busy operations reject; there
// is no deferred switch queue.
type Runtime struct {
	e *Engine

	mu        sync.Mutex
	cur       *Session
	rebind    func(*Session) error
	replacing bool
}

// ReplaceResult is what a replacement returns on success.
type ReplaceResult struct {
	Cancelled bool
}

// NewRuntime makes a runtime whose current session is s.
func (e *Engine) NewRuntime(s *Session) *Runtime { return &Runtime{e: e, cur: s} }

// Session is the current session: when the engine opened it again in
// place of an instance another process had made out of date (relock.go),
// the new instance.
func (r *Runtime) Session() *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	for next := r.cur.successor(); next != nil; next = r.cur.successor() {
		r.cur = next
	}
	return r.cur
}

// Cwd is the current session's working directory.
func (r *Runtime) Cwd() string { return r.Session().Cwd() }

// SetRebindSession installs fn, called after each replacement is installed
// so consumers can attach to the new session. A failing rebind does not roll
// the replacement back.
func (r *Runtime) SetRebindSession(fn func(*Session) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rebind = fn
}

// begin reserves the runtime for one replacement after checking that the
// current session can be left.
func (r *Runtime) begin() (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replacing {
		return nil, errorf(CodeBusy, "a session replacement is already running")
	}
	if err := r.cur.admit(kindLeave); err != nil {
		return nil, err
	}
	r.replacing = true
	return r.cur, nil
}

// install makes next current, then runs the rebind callback.
func (r *Runtime) install(prev, next *Session) (ReplaceResult, error) {
	// Old title work is cancelled and drained before the new session is
	// writable from this runtime.
	prev.cancelAuxiliary()
	r.mu.Lock()
	r.cur = next
	r.replacing = false
	fn := r.rebind
	r.mu.Unlock()
	if fn != nil {
		if err := fn(next); err != nil {
			return ReplaceResult{}, err
		}
	}
	return ReplaceResult{}, nil
}

func (r *Runtime) abandon() {
	r.mu.Lock()
	r.replacing = false
	r.mu.Unlock()
}

// NewSession replaces the current session with an empty one in the same
// scope and cwd, keeping the selected model and effort. A failure keeps
// the previous session current.
func (r *Runtime) NewSession(ctx context.Context) (ReplaceResult, error) {
	prev, err := r.begin()
	if err != nil {
		return ReplaceResult{}, err
	}
	h := prev.st.Header()
	var next *Session
	switch {
	case !prev.st.Persistent():
		next = newSession(r.e, store.InMemory(prev.cwd))
		if h.Model != nil {
			err = next.saveMeta(func(nh *store.Header) {
				nh.Model, nh.Effort, nh.Permission = h.Model, h.Effort, h.Permission
				nh.Budget = r.e.defaultBudget()
			})
		}
	case h.Model != nil:
		// Same scope and cwd (an independent chat keeps its private
		// directory), same model, effort and permission.
		next, err = r.e.newDraft(prev.workspaceID, prev.cwd, *h.Model, h.Effort, h.Permission)
	default:
		next, err = r.e.NewSession(prev.workspaceID)
	}
	if err != nil {
		r.abandon()
		return ReplaceResult{}, err
	}
	return r.install(prev, next)
}

// SwitchSession makes another saved session current: its history, model
// and cwd. A failure to open it keeps the previous session current, and so
// does a session this process cannot write (session_locked: another
// process writes it, or its files are read-only).
func (r *Runtime) SwitchSession(ctx context.Context, id string) (ReplaceResult, error) {
	prev, err := r.begin()
	if err != nil {
		return ReplaceResult{}, err
	}
	// The old session's title work is drained before another session
	// opens writable here.
	prev.cancelAuxiliary()
	next, err := r.e.Session(id)
	if err == nil {
		// Opening took the lock if it could: another process writes it,
		// so none of its prompts could run here.
		err = next.writableHere()
	}
	if err != nil {
		r.abandon()
		return ReplaceResult{}, err
	}
	return r.install(prev, next)
}

// Dispose waits for cancellation and disposes the current session. It
// rejects while a replacement runs or a save is pending.
func (r *Runtime) Dispose(ctx context.Context) error {
	r.mu.Lock()
	if r.replacing {
		r.mu.Unlock()
		return errorf(CodeBusy, "a session replacement is running")
	}
	cur := r.cur
	r.mu.Unlock()
	if err := cur.admit(kindDispose); err != nil {
		return err
	}
	cur.dispose(ctx)
	r.e.mu.Lock()
	if r.e.sessions[cur.id] == cur {
		delete(r.e.sessions, cur.id)
	}
	r.e.mu.Unlock()
	return nil
}
