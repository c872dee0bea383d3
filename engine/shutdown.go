package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
)

// ShutdownMode says what happens to running work at shutdown.
type ShutdownMode int

const (
	// Drain lets running work and queued inputs finish.
	Drain ShutdownMode = iota
	// Abort stops running work (the partial output is still saved).
	Abort
)

// RecoveryError reports a session whose result could not be saved even at
// shutdown; its snapshot was written to Path instead.
type RecoveryError struct {
	SessionID string
	Path      string
	Err       error
}

func (e *RecoveryError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("session %s: unsaved result lost: %v", e.SessionID, e.Err)
	}
	return fmt.Sprintf("session %s: could not save (%v); its unsaved result is in %s", e.SessionID, e.Err, e.Path)
}

// Shutdown settles every live session: drains or aborts running work,
// retries pending saves, and writes what still cannot be saved to a
// recovery file. The returned error joins *RecoveryError values.
func (e *Engine) Shutdown(ctx context.Context, mode ShutdownMode) error {
	e.mu.Lock()
	e.closed = true
	live := e.liveSessionsLocked()
	e.mu.Unlock()
	if mode == Abort {
		for _, s := range live {
			s.mu.Lock()
			s.paused = true
			s.mu.Unlock()
		}
	}
	for _, s := range live {
		if mode == Abort {
			_, _ = s.Abort(ctx)
		} else {
			_ = s.drain(ctx)
		}
		s.cancelAuxiliary()
	}
	var errs []error
	for _, s := range live {
		if !s.hasPendingSave() {
			continue
		}
		if _, err := s.Flush(); err == nil {
			continue
		}
		msgs, saveErr := s.PendingSave()
		rec := &RecoveryError{SessionID: s.id, Err: saveErr}
		rec.Path, rec.Err = s.writeRecovery(msgs, saveErr)
		errs = append(errs, rec)
	}
	e.stopMCP("")
	for _, s := range live {
		s.SetMCPServers(nil)
		_ = s.st.Close()
	}
	return errors.Join(errs...)
}

// drain waits until the session's run and its queue are done.
func (s *Session) drain(ctx context.Context) error {
	for {
		if err := s.Wait(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		// Held items (being edited) never dispatch by themselves.
		waiting := slices.ContainsFunc(s.queue, func(it *QueueItem) bool { return !it.Held })
		idle := s.op == OpIdle && (!waiting || s.paused || s.pending != nil)
		s.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// writeRecovery writes the unsaved snapshot next to the session directory
// (or in the temp dir when that fails too) as JSON.
func (s *Session) writeRecovery(msgs any, saveErr error) (string, error) {
	body, err := jsonenc.MarshalIndent(map[string]any{
		"sessionId": s.id, "workspaceId": wsPtr(s.workspaceID), "cwd": s.cwd,
		"error": fmt.Sprint(saveErr), "header": s.st.Header(), "messages": msgs,
	}, "", "  ")
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("loop-recovery-%s-%d.json", s.id, time.Now().UnixMilli())
	var dirs []string
	if d := s.st.Dir(); d != "" {
		dirs = append(dirs, filepath.Dir(d))
	}
	dirs = append(dirs, os.TempDir())
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err = os.WriteFile(p, body, 0o600); err == nil {
			return p, saveErr
		}
	}
	return "", errors.Join(saveErr, err)
}
