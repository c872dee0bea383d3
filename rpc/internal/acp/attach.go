package acp

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
)

// attach gives a session this connection opened what the client serves:
// its files (fs.readTextFile / fs.writeTextFile) and terminals (terminal),
// as initialize advertised them, and the MCP servers it named. servers is
// nil when the request named none (session/resume may omit them): the
// running ones stay. Call it without a.mu or evMu held: starting MCP
// servers publishes the session's state, whose event takes evMu.
func (a *Agent) attach(sess *engine.Session, servers []mcpServer, serversChanged bool) {
	a.mu.Lock()
	caps := a.client
	a.mu.Unlock()
	id := sess.ID()
	// Interfaces are set only when served: a typed nil would look served.
	var cfs tools.ClientFS
	if caps.FS.ReadTextFile || caps.FS.WriteTextFile {
		cfs = &editorFS{a: a, sessionID: id, read: caps.FS.ReadTextFile, write: caps.FS.WriteTextFile}
	}
	var term tools.ClientTerminal
	if caps.Terminal {
		term = &editorTerminal{a: a, sessionID: id}
	}
	sess.SetClientTools(cfs, term)
	if servers == nil || !serversChanged {
		return
	}
	cfgs, err := mcp.FromACP(servers)
	if err != nil {
		// The usable entries still start, as with config.json's servers.
		a.log.Warn("acp mcpServers not all usable", "session", id, "err", err)
	}
	sess.SetMCPServers(cfgs)
}

// serving reports whether the client still serves files and terminals for
// sessionID: the connection is open and the session open on it. When it
// is not (session/close, the connection ended), the tools fall back to
// Loop's own (tools.ErrNotServed).
func (a *Agent) serving(sessionID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.closed && a.conn != nil && a.views[sessionID] != nil
}
