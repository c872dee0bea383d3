package acp

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"slices"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/sourcegraph/jsonrpc2"
)

func (a *Agent) initialize(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p initializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	var version int
	if err := json.Unmarshal(p.ProtocolVersion, &version); err != nil {
		return nil, invalidParams("protocolVersion must be an integer (ACP); this connection speaks ACP v%d", ProtocolVersion)
	}
	a.mu.Lock()
	a.initialized = true
	a.client = p.ClientCapabilities
	a.clientInfo = p.ClientInfo
	a.mu.Unlock()
	// Every version a client may send gets our only one; a client that
	// cannot speak v1 disconnects, as the protocol says.
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":        true,
			"promptCapabilities": map[string]any{"image": true, "audio": false, "embeddedContext": true},
			"mcpCapabilities":    map[string]any{"http": true, "sse": false},
			"sessionCapabilities": map[string]any{
				"list": map[string]any{}, "resume": map[string]any{}, "close": map[string]any{}, "delete": map[string]any{},
				// session/fork, as ACP's unstable schema defines it (fork.go).
				"fork": map[string]any{},
			},
			// Loop's extension methods, where ACP says custom
			// capabilities go (docs/acp.md, "_loop/search").
			"_meta": searchMeta(),
		},
		"authMethods": []any{},
		"agentInfo":   implementation{Name: "loop", Title: "Loop", Version: a.opts.Version},
	}, nil
}

// authenticate: Loop reads provider keys from its environment and
// advertises no auth methods, so there is nothing to do.
func (a *Agent) authenticate(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	return struct{}{}, nil
}

type openParams struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	McpServers []mcpServer `json:"mcpServers"`
}

func (a *Agent) sessionNew(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p openParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := absolute("cwd", p.Cwd); err != nil {
		return nil, err
	}
	// The session is written at once, not kept as a draft: clients that
	// run one process per command (acpx's `sessions new`, then `set-mode`,
	// then `prompt`) load it, with its mode and options, from the next
	// process. Sessions a client opens and abandons without a prompt stay
	// out of session/list (docs/acp.md, "Sessions made over ACP").
	return later(func(ctx context.Context) (any, error) {
		ws, err := a.eng.AddWorkspace(p.Cwd, "")
		if err != nil {
			return nil, err
		}
		sess, err := a.eng.CreateSession(ws.ID, engine.SessionOptions{})
		if err != nil {
			return nil, err
		}
		snap := sess.Snapshot()
		servers := orEmpty(p.McpServers)
		a.mu.Lock()
		_, changed := a.openViewLocked(snap, servers)
		a.mu.Unlock()
		a.attach(sess, servers, changed)
		res := a.setup(snap)
		res.SessionID = snap.SessionID
		return res, nil
	})
}

// decodeOpenSession decodes the params of a method on an existing
// session (load, resume, close, delete), which must name it.
func decodeOpenSession(raw *json.RawMessage) (openParams, error) {
	var p openParams
	if err := decodeParams(raw, &p); err != nil {
		return p, err
	}
	return p, required("sessionId", p.SessionID)
}

func orEmpty(s []mcpServer) []mcpServer {
	if s == nil {
		return []mcpServer{}
	}
	return s
}

// sessionLoad replays the whole history as session/update notifications,
// then answers. The replay holds evMu: live updates of the session wait
// until it is sent, so nothing is lost or told twice between the two.
func (a *Agent) sessionLoad(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	p, err := decodeOpenSession(raw)
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		return a.reopen(sess, orEmpty(p.McpServers), true), nil
	})
}

// sessionResume reopens a session without replaying it.
func (a *Agent) sessionResume(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	p, err := decodeOpenSession(raw)
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		// Omitted mcpServers (nil) keep the ones the view has.
		return a.reopen(sess, p.McpServers, false), nil
	})
}

// reopen opens the session on this connection, sending its history first
// when replay is set, attaches it and returns the setup to answer with.
// It holds evMu while it opens and replays: live updates of the session
// wait until the replay is sent.
func (a *Agent) reopen(sess *engine.Session, servers []mcpServer, replay bool) sessionSetup {
	a.evMu.Lock()
	snap := sess.Snapshot()
	a.mu.Lock()
	v, changed := a.openViewLocked(snap, servers)
	var updates []any
	if replay {
		updates = a.replay(v, snap)
	}
	a.mu.Unlock()
	for _, u := range updates {
		a.notify(snap.SessionID, u)
	}
	a.evMu.Unlock()
	a.attach(sess, servers, changed)
	return a.setup(snap)
}

// sessionClose cancels the session's work as session/cancel does and stops
// streaming it to this connection. The session's files stay: it lists,
// loads and resumes later.
func (a *Agent) sessionClose(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	p, err := decodeOpenSession(raw)
	if err != nil {
		return nil, err
	}
	wait, err := a.cancelSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	a.evMu.Lock()
	a.mu.Lock()
	named := false
	if v := a.views[p.SessionID]; v != nil {
		named = len(v.mcpServers) > 0
	}
	delete(a.views, p.SessionID)
	a.mu.Unlock()
	a.evMu.Unlock()
	// "Always" answers last as long as the editor's session.
	if sess, err := a.eng.Session(p.SessionID); err == nil {
		sess.ResetApprovals()
	}
	// Without its view the session no longer uses the client's files and
	// terminals (serving); the MCP servers the client named stop once the
	// turn has.
	return later(func(ctx context.Context) (any, error) {
		if _, err := wait(ctx); err != nil {
			return nil, err
		}
		a.mu.Lock()
		_, reopened := a.views[p.SessionID]
		a.mu.Unlock()
		// A load or resume that came meanwhile owns the servers now.
		if named && !reopened {
			if sess, err := a.eng.Session(p.SessionID); err == nil {
				sess.SetMCPServers(nil)
			}
		}
		return struct{}{}, nil
	})
}

func (a *Agent) sessionDelete(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	p, err := decodeOpenSession(raw)
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		if err := a.eng.Delete(ctx, sess.WorkspaceID(), p.SessionID); err != nil {
			return nil, err
		}
		a.evMu.Lock()
		a.mu.Lock()
		delete(a.views, p.SessionID)
		a.mu.Unlock()
		a.evMu.Unlock()
		return struct{}{}, nil
	})
}

// Listing ---------------------------------------------------------------------

// listCursor is where the previous page stopped, in the list's order
// (newest activity first, ids breaking ties): a page starts after it, so
// sessions that move while a client pages are neither repeated nor lost
// unless their activity changed.
type listCursor struct {
	UpdatedAt int64  `json:"u"`
	ID        string `json:"id"`
}

type listEntry struct {
	info      sessionInfo
	updatedAt int64
}

func (a *Agent) sessionList(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		Cwd    *string `json:"cwd"`
		Cursor *string `json:"cursor"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Cwd != nil {
		if err := absolute("cwd", *p.Cwd); err != nil {
			return nil, err
		}
	}
	var after *listCursor
	if p.Cursor != nil && *p.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(*p.Cursor)
		var c listCursor
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil || c.ID == "" {
			return nil, invalidParams("cursor is not one this agent returned")
		}
		after = &c
	}
	return later(func(ctx context.Context) (any, error) {
		entries, err := a.listAll(p.Cwd)
		if err != nil {
			return nil, err
		}
		if after != nil {
			i := slices.IndexFunc(entries, func(e listEntry) bool {
				return e.updatedAt < after.UpdatedAt || (e.updatedAt == after.UpdatedAt && e.info.SessionID < after.ID)
			})
			if i < 0 {
				i = len(entries)
			}
			entries = entries[i:]
		}
		res := listResult{Sessions: []sessionInfo{}}
		for i, e := range entries {
			if i == a.opts.PageSize {
				last := entries[i-1]
				b, _ := json.Marshal(listCursor{UpdatedAt: last.updatedAt, ID: last.info.SessionID})
				c := base64.RawURLEncoding.EncodeToString(b)
				res.NextCursor = &c
				break
			}
			res.Sessions = append(res.Sessions, e.info)
		}
		return res, nil
	})
}

// listAll lists the sessions of every workspace, or of the one whose
// directory is cwd. Independent chats (native sessions without a
// workspace) have private directories and are not listed.
func (a *Agent) listAll(cwd *string) ([]listEntry, error) {
	wss, err := a.eng.Workspaces()
	if err != nil {
		return nil, err
	}
	if cwd != nil {
		want := filepath.Clean(*cwd)
		canon, err := filepath.EvalSymlinks(want)
		if err != nil {
			canon = want
		}
		wss = slices.DeleteFunc(wss, func(ws engine.Workspace) bool { return ws.Cwd != want && ws.Cwd != canon })
	}
	var out []listEntry
	for _, ws := range wss {
		list, err := a.eng.List(ws.ID, false)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			info := sessionInfo{SessionID: s.ID, Cwd: ws.Cwd, UpdatedAt: isoTime(s.UpdatedAt)}
			if s.Title != "" {
				t := s.Title
				info.Title = &t
			}
			out = append(out, listEntry{info: info, updatedAt: s.UpdatedAt})
		}
	}
	slices.SortStableFunc(out, func(x, y listEntry) int {
		if x.updatedAt != y.updatedAt {
			return cmp.Compare(y.updatedAt, x.updatedAt)
		}
		return cmp.Compare(y.info.SessionID, x.info.SessionID)
	})
	return out, nil
}

func isoTime(ms int64) *string {
	if ms <= 0 {
		return nil
	}
	s := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}
