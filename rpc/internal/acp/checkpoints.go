package acp

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/loopdev/loop/engine"
	"github.com/sourcegraph/jsonrpc2"
)

// Loop's ACP extensions for file checkpoints (docs/acp.md,
// "_loop/restore_files" and "_loop/changes"): the native
// session/restore_files and session/changes, with the same params and
// results; initialize advertises them in agentCapabilities._meta.
const (
	restoreFilesMethod = "_loop/restore_files"
	changesMethod      = "_loop/changes"
)

type restoreFilesResult struct {
	Restored  []string `json:"restored"`
	Conflicts []string `json:"conflicts"`
}

type changedFile struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}

type runChanges struct {
	RunID             string        `json:"runId"`
	MessageStartIndex int           `json:"messageStartIndex"`
	MessageEndIndex   int           `json:"messageEndIndex"`
	Files             []changedFile `json:"files"`
	BashNotCovered    bool          `json:"bashNotCovered,omitempty"`
}

type changesResult struct {
	Runs []runChanges `json:"runs"`
}

func (a *Agent) loopRestoreFiles(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID    string          `json:"sessionId"`
		MessageCount *int            `json:"messageCount"`
		Force        json.RawMessage `json:"force"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if p.MessageCount == nil || *p.MessageCount < 0 {
		return nil, invalidParams("messageCount must be a nonnegative integer")
	}
	force := false
	switch string(bytes.TrimSpace(p.Force)) {
	case "", "null", "false":
	case "true":
		force = true
	default:
		return nil, invalidParams("force must be a boolean")
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		res, err := sess.RestoreFiles(ctx, *p.MessageCount, force)
		if err != nil {
			return nil, err
		}
		return restoreFilesResult{Restored: res.Restored, Conflicts: res.Conflicts}, nil
	})
}

func (a *Agent) loopChanges(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		runs, err := sess.Changes(ctx)
		if err != nil {
			return nil, err
		}
		return changesResultOf(runs), nil
	})
}

func changesResultOf(runs []engine.RunChanges) changesResult {
	out := changesResult{Runs: make([]runChanges, 0, len(runs))}
	for _, r := range runs {
		rc := runChanges{RunID: r.RunID, MessageStartIndex: r.MessageStartIndex, MessageEndIndex: r.MessageEndIndex,
			Files: make([]changedFile, 0, len(r.Files)), BashNotCovered: r.BashNotCovered}
		for _, f := range r.Files {
			rc.Files = append(rc.Files, changedFile(f))
		}
		out.Runs = append(out.Runs, rc)
	}
	return out
}
