package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loopdev/loop/engine/mcp"
	"github.com/loopdev/loop/engine/tools"
	"github.com/loopdev/loop/store"
)

// mcpReadyWait bounds how long a request waits for MCP servers that are
// still starting; a slow server's tools join later requests.
const mcpReadyWait = 3 * time.Second

// mcpFor returns the MCP servers for a working directory, starting them on
// first use (start-up itself never waits for them). One set serves every
// session in that cwd; a session in another cwd gets its own.
func (e *Engine) mcpFor(cwd string) *mcp.Manager {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.cat.config.MCPServers) == 0 {
		return nil
	}
	if m, ok := e.mcps[cwd]; ok {
		return m
	}
	servers, err := mcp.ParseServers(e.cat.config.MCPServers)
	if err != nil {
		e.log.Error("mcpServers not usable", "err", err)
		return nil
	}
	if e.mcps == nil {
		e.mcps = map[string]*mcp.Manager{}
	}
	m := mcp.NewManager(servers, cwd, e.log)
	m.OnChange(func() {
		for _, s := range e.LiveSessions() {
			if s.cwd == cwd {
				s.publishState()
			}
		}
	})
	m.Start()
	e.mcps[cwd] = m
	return m
}

// stopMCP stops the servers of cwd ("" stops all).
func (e *Engine) stopMCP(cwd string) {
	e.mu.Lock()
	var stop []*mcp.Manager
	for c, m := range e.mcps {
		if cwd == "" || c == cwd {
			stop = append(stop, m)
			delete(e.mcps, c)
		}
	}
	e.mu.Unlock()
	for _, m := range stop {
		_ = m.Close()
	}
}

// mcpStatus reports the servers of cwd for snapshots, without starting them.
func (e *Engine) mcpStatus(cwd string) []mcp.ServerStatus {
	e.mu.Lock()
	m := e.mcps[cwd]
	e.mu.Unlock()
	if m == nil {
		return []mcp.ServerStatus{}
	}
	return m.Status()
}

// mcpTools lists the MCP tools offered to the model in cwd.
func (e *Engine) mcpTools(ctx context.Context, cwd string) []mcp.Tool {
	m := e.mcpFor(cwd)
	if m == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, mcpReadyWait)
	defer cancel()
	_ = m.WaitReady(wctx)
	return m.Tools()
}

// execMCP runs an MCP tool call. Every MCP call may change the world, so
// it asks for approval under every preset but full-access.
func (s *Session) execMCP(ctx context.Context, call store.Block, args json.RawMessage, preset tools.Preset) tools.Result {
	m := s.e.mcpFor(s.cwd)
	if m == nil {
		return toolError("No MCP server is configured for " + call.Name + ".")
	}
	if preset != tools.PresetFullAccess {
		s.mu.Lock()
		allowed := s.allowed[call.Name]
		s.mu.Unlock()
		if !allowed {
			if ok, why := s.askApproval(ctx, call, args, "MCP tools ask before they run under the "+string(preset)+" preset"); !ok {
				return toolError(why)
			}
		}
	}
	res, err := m.Call(ctx, call.Name, args)
	if err != nil {
		return toolError("The MCP call failed: " + err.Error())
	}
	return tools.Result{Content: res.Content, IsError: res.IsError}
}
