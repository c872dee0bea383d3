package acp

import (
	"encoding/json"

	"github.com/loopdev/loop/engine"
)

// view is what the agent knows of one session this connection has open:
// enough to translate the session's events and to send only real changes.
type view struct {
	id         string
	cwd        string
	mcpServers []mcpServer // kept as the client sent them (docs/acp.md)
	// ours holds the requestIds this connection submitted: their user
	// messages are the client's own and are not echoed back.
	ours map[string]bool
	// tools are the tool calls announced in this view, by id.
	tools map[string]*toolView
	// running is the tool call started and not ended; a client terminal
	// shows on its card (terminal.go).
	running string

	// What the client was last told.
	title      string
	mode       string
	optionsKey string
}

type toolView struct {
	name     string
	args     json.RawMessage
	started  bool // the card said in_progress
	ended    bool
	progress []byte // live output so far, the tail only
	// terminalID is the client terminal the call runs in (terminal.go):
	// the card shows it instead of the output as text.
	terminalID string
}

// openViewLocked registers sess as open on this connection, or refreshes
// the view when it already is. mcpChanged says whether mcp (non-nil) differs
// from what this connection named for the session before, so that opening
// it again with the same servers does not restart them. Call with a.mu held.
func (a *Agent) openViewLocked(snap *engine.Snapshot, mcp []mcpServer) (v *view, mcpChanged bool) {
	v = a.views[snap.SessionID]
	if v == nil {
		v = &view{id: snap.SessionID, ours: map[string]bool{}, tools: map[string]*toolView{}}
		a.views[snap.SessionID] = v
		mcpChanged = mcp != nil
	} else if mcp != nil {
		before, _ := json.Marshal(v.mcpServers)
		after, _ := json.Marshal(mcp)
		mcpChanged = string(before) != string(after)
	}
	v.cwd = snap.Cwd
	if mcp != nil {
		v.mcpServers = mcp
	}
	v.title = snap.State.Title
	v.mode = snap.State.PermissionPreset
	v.optionsKey = optionsKey(a.configOptions(snap))
	return v, mcpChanged
}

// MCPServers returns the MCP servers the client named for a session it
// opened on this connection (session/new, load or resume), as it sent
// them; the session runs them (attach.go).
func (a *Agent) MCPServers(sessionID string) []json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.views[sessionID]
	if v == nil {
		return nil
	}
	return append([]json.RawMessage(nil), v.mcpServers...)
}

func optionsKey(opts []configOption) string {
	b, _ := json.Marshal(opts)
	return string(b)
}
