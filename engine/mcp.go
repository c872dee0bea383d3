package engine

import (
	"context"
	"time"

	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
)

// mcpReadyWait bounds how long a request waits for MCP servers that are
// still starting; a slow server's tools join later requests.
const mcpReadyWait = 3 * time.Second

// mcpKey names the set of MCP servers for a working directory and the
// sandbox of a preset there: sessions whose presets sandbox their servers
// alike share one set, and a session never uses servers confined less (or
// more) than its preset says (docs/configuration.md, "MCP servers").
func mcpKey(cwd, sandboxName string) string {
	if sandboxName == "" {
		return cwd
	}
	return cwd + "\x00" + sandboxName
}

// mcpFor returns the MCP servers for a working directory under preset,
// starting them on first use (start-up itself never waits for them). One
// set serves every session in that cwd whose preset gets the same
// sandbox; a session in another cwd gets its own.
func (e *Engine) mcpFor(cwd string, preset tools.Preset) *mcp.Manager {
	sb := e.sandboxPolicy(preset, cwd)
	key := mcpKey(cwd, e.sandboxName(preset))
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	if m, ok := e.mcps[key]; ok {
		e.mu.Unlock()
		return m
	}
	cat := e.cat
	e.mu.Unlock()
	// Matching the workspace entries resolves paths on disk, so it runs
	// outside e.mu; a reload meanwhile makes the choice again.
	wc, _ := cat.config.workspaceConfig(cwd, e.opts.Getenv)
	if len(cat.config.MCPServers) == 0 && len(wc.MCPServers) == 0 {
		return nil
	}
	servers, err := mcp.ParseServers(cat.config.MCPServers)
	if err != nil {
		// Valid entries still start; the bad ones are named in the log.
		e.log.Error("mcpServers: some entries are not usable", "err", err)
	}
	local, err := mcp.ParseServers(wc.MCPServers)
	if err != nil {
		e.log.Error("workspace mcpServers: some entries are not usable", "cwd", cwd, "err", err)
	}
	servers = mcp.Merge(servers, local)
	if len(servers) == 0 {
		return nil
	}
	e.mu.Lock()
	if e.cat != cat {
		e.mu.Unlock()
		return e.mcpFor(cwd, preset)
	}
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	if m, ok := e.mcps[key]; ok {
		// Another request started them meanwhile.
		e.mu.Unlock()
		return m
	}
	if e.mcps == nil {
		e.mcps = map[string]*mcp.Manager{}
	}
	m := mcp.NewManager(servers, cwd, e.log)
	m.HideEnv(e.cat.keyVars)
	m.Sandbox(sb)
	m.OnChange(func() {
		for _, s := range e.LiveSessions() {
			if s.cwd == cwd {
				s.publishState()
			}
		}
	})
	// Start only launches goroutines; under e.mu, no caller sees the
	// servers before they are starting.
	m.Start()
	e.mcps[key] = m
	e.mu.Unlock()
	return m
}

// stopMCP stops the servers of cwd ("" stops all).
func (e *Engine) stopMCP(cwd string) {
	e.mu.Lock()
	var stop []*mcp.Manager
	for key, m := range e.mcps {
		if cwd == "" || m.Cwd() == cwd {
			stop = append(stop, m)
			delete(e.mcps, key)
			delete(e.mcpWaited, m)
		}
	}
	e.mu.Unlock()
	for _, m := range stop {
		_ = m.Close()
	}
}

// mcpStatusLocked reports the session's own servers and its cwd's.
func (s *Session) mcpStatusLocked() []mcp.ServerStatus {
	out := s.e.mcpStatus(s.cwd, tools.Preset(s.st.Permission()))
	if s.ownMCP != nil {
		out = append(s.e.redactStatus(s.ownMCP.Status()), out...)
	}
	return out
}

// mcpStatus reports the servers of cwd under preset for snapshots,
// without starting them.
func (e *Engine) mcpStatus(cwd string, preset tools.Preset) []mcp.ServerStatus {
	key := mcpKey(cwd, e.sandboxName(preset))
	e.mu.Lock()
	m := e.mcps[key]
	e.mu.Unlock()
	if m == nil {
		return []mcp.ServerStatus{}
	}
	return e.redactStatus(m.Status())
}

// redactStatus removes the configuration's secrets from the servers'
// errors, which quote a failed server's stderr and go out in snapshots.
func (e *Engine) redactStatus(st []mcp.ServerStatus) []mcp.ServerStatus {
	secrets := e.secrets.Load()
	for i := range st {
		st[i].Error, st[i].LastError = secrets.Text(st[i].Error), secrets.Text(st[i].LastError)
	}
	return st
}

// mcpTools lists the MCP tools offered to the model in cwd under preset.
func (e *Engine) mcpTools(ctx context.Context, cwd string, preset tools.Preset) []mcp.Tool {
	m := e.mcpFor(cwd, preset)
	if m == nil {
		return nil
	}
	e.waitMCPOnce(ctx, m)
	return m.Tools()
}

// waitMCPOnce gives freshly started servers a short time to get ready,
// once per set of servers: later requests take the tools of whatever is
// ready, so a crash-looping server never delays every turn.
func (e *Engine) waitMCPOnce(ctx context.Context, m *mcp.Manager) {
	e.mu.Lock()
	if e.mcpWaited == nil {
		e.mcpWaited = map[*mcp.Manager]bool{}
	}
	first := !e.mcpWaited[m]
	e.mcpWaited[m] = true
	e.mu.Unlock()
	if !first {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, mcpReadyWait)
	defer cancel()
	_ = m.WaitReady(wctx)
}

// mcpTools lists the session's own MCP tools, then the configured ones
// of its cwd; a session's own server shadows a configured one of the same
// name.
func (s *Session) mcpTools(ctx context.Context) []mcp.Tool {
	var out []mcp.Tool
	seen := map[string]bool{}
	if own := s.sessionMCP(); own != nil {
		s.e.waitMCPOnce(ctx, own)
		for _, t := range own.Tools() {
			seen[t.Server] = true
			out = append(out, t)
		}
	}
	for _, t := range s.e.mcpTools(ctx, s.cwd, tools.Preset(s.st.Permission())) {
		if !seen[t.Server] {
			out = append(out, t)
		}
	}
	return out
}

// mcpManagerFor finds the manager serving a namespaced tool name.
func (s *Session) mcpManagerFor(name string) *mcp.Manager {
	server, _ := mcp.ServerOf(name)
	if own := s.sessionMCP(); own != nil {
		for _, st := range own.Status() {
			if st.Name == server {
				return own
			}
		}
	}
	return s.e.mcpFor(s.cwd, tools.Preset(s.st.Permission()))
}

// SetClientTools lets the front end serve file operations and terminals
// for this session (nil for either means Loop's own).
func (s *Session) SetClientTools(fs tools.ClientFS, term tools.ClientTerminal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clientFS, s.clientTerm = fs, term
}

// SetMCPServers starts MCP servers the front end named for this session
// (ACP's session/new mcpServers), beside the configured ones; they stop
// when the session is disposed or replaced by another call.
func (s *Session) SetMCPServers(servers map[string]mcp.ServerConfig) {
	var m *mcp.Manager
	preset := tools.Preset(s.st.Permission())
	if len(servers) > 0 {
		m = mcp.NewManager(servers, s.cwd, s.e.log)
		m.HideEnv(s.e.catalog().keyVars)
		// The front end's servers get the sandbox of the session's
		// preset; a switch to a preset with another sandbox starts them
		// again (restartOwnMCP).
		m.Sandbox(s.e.sandboxPolicy(preset, s.cwd))
		m.OnChange(s.publishState)
		m.Start()
	}
	s.mu.Lock()
	old := s.ownMCP
	s.ownMCP = m
	s.ownMCPServers, s.ownMCPSandbox = servers, s.e.sandboxName(preset)
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
		s.e.mu.Lock()
		delete(s.e.mcpWaited, old)
		s.e.mu.Unlock()
	}
}

func (s *Session) sessionMCP() *mcp.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownMCP
}

// restartOwnMCP starts the front end's servers again when the session's
// preset now has another sandbox than the one they run in, so that they
// are never confined other than the preset says.
func (s *Session) restartOwnMCP() {
	name := s.e.sandboxName(tools.Preset(s.st.Permission()))
	s.mu.Lock()
	servers, running := s.ownMCPServers, s.ownMCP != nil && s.ownMCPSandbox != name
	s.mu.Unlock()
	if running {
		s.SetMCPServers(servers)
	}
}
