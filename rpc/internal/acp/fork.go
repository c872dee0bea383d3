package acp

import (
	"context"
	"encoding/json"
	"os"

	"github.com/loopdev/loop/engine"
	"github.com/sourcegraph/jsonrpc2"
)

// Forks, rewinds and edits over ACP (docs/acp.md): session/fork as ACP's
// unstable schema defines it (a new session from an existing one's
// context, advertised as sessionCapabilities.fork), and Loop's extension
// methods for the rest, advertised in agentCapabilities._meta.loop.
const (
	rewindMethod = "_loop/rewind"
	editMethod   = "_loop/edit"
)

// sessionFork forks the session's whole saved history into a new session
// and opens it on this connection as session/new does. cwd is required,
// as ACP says, and must be the session's own: a fork works where its
// parent does.
func (a *Agent) sessionFork(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	p, err := decodeOpenSession(raw)
	if err != nil {
		return nil, err
	}
	if err := absolute("cwd", p.Cwd); err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		if !sameDir(p.Cwd, sess.Cwd()) {
			return nil, invalidParams("cwd %s is not the working directory of session %s (%s): a fork works where its session does", p.Cwd, p.SessionID, sess.Cwd())
		}
		f, err := sess.Fork(sess.Snapshot().State.MessageCount, "")
		if err != nil {
			return nil, err
		}
		snap := f.Snapshot()
		servers := orEmpty(p.McpServers)
		a.mu.Lock()
		_, changed := a.openViewLocked(snap, servers)
		a.mu.Unlock()
		a.attach(f, servers, changed)
		res := a.setup(snap)
		res.SessionID = snap.SessionID
		return res, nil
	})
}

// sameDir reports whether a and b name one directory.
func sameDir(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

// loopRewind is _loop/rewind {sessionId, messageCount, files?}: native
// session/rewind; it answers {forkedId}. The client's copy of the
// conversation is out of date: session/load replays the rewound one.
func (a *Agent) loopRewind(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID    string `json:"sessionId"`
		MessageCount *int   `json:"messageCount"`
		Files        bool   `json:"files"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if p.MessageCount == nil {
		return nil, invalidParams("messageCount is required")
	}
	sess, err := a.eng.Session(p.SessionID)
	if err != nil {
		return nil, err
	}
	// It answers in order on the connection, as the other session commands do;
	// putting files back (p.Files) is as cancellable as the command is.
	_, forkID, err := sess.Rewind(context.Background(), *p.MessageCount, p.Files)
	if err != nil {
		return nil, err
	}
	return map[string]any{"forkedId": forkID}, nil
}

// loopEdit is _loop/edit {sessionId, userMessageIndex, prompt}: native
// session/edit with session/prompt's content blocks, answered as
// session/prompt is (when the run ends), with _meta.loop.forkedId.
func (a *Agent) loopEdit(id jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID        string        `json:"sessionId"`
		UserMessageIndex *int          `json:"userMessageIndex"`
		Prompt           []promptBlock `json:"prompt"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if p.UserMessageIndex == nil {
		return nil, invalidParams("userMessageIndex is required")
	}
	idx := *p.UserMessageIndex
	return a.submit(id, raw, p.SessionID, &p.Prompt, func(sess *engine.Session, in engine.PromptInput, pp *pendingPrompt) (engine.PromptResult, error) {
		a.mu.Lock()
		pp.edit = true
		a.mu.Unlock()
		res, err := sess.Edit(idx, in)
		a.mu.Lock()
		pp.forkedID, pp.edited = res.ForkedID, true
		held := pp.held
		pp.held = nil
		a.mu.Unlock()
		if held != nil {
			held()
		}
		return res.PromptResult, err
	})
}
