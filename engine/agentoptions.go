package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/tools"
)

// AgentOptions shape a live session's agent loop in this process: what the
// model is told (the system prompt), which tools it is offered and may
// call, and how many model requests one prompt may make (docs/sdk.md,
// "Agent options"). They are not saved with the session: opened again, or
// by another process, it runs with Loop's own. The zero value is Loop's
// behaviour.
type AgentOptions struct {
	// SystemPrompt, when not empty, replaces Loop's system prompt.
	SystemPrompt string
	// AppendSystemPrompt, when not empty, follows the system prompt
	// (Loop's, or SystemPrompt) after a blank line.
	AppendSystemPrompt string
	// Tools, when not nil, are the only tools the model is offered and may
	// call; empty and not nil: none. Each name is a built-in tool (read,
	// write, edit, bash, ls, grep, find), an MCP tool as the model sees it
	// (mcp__<server>__<tool>), or every tool of an MCP server
	// (mcp__<server> or mcp__<server>__*).
	Tools []string
	// DisallowedTools, in the same names, are never offered, and a call
	// the model makes to one anyway does not run: it gets an error
	// result. They win over Tools.
	DisallowedTools []string
	// MaxTurns bounds the model requests of one run (a prompt's, or a
	// resume's; compaction and titles not counted); 0 is Loop's own bound
	// (200). The request that would exceed it is not sent: the run
	// settles with budget_exceeded.
	MaxTurns int
}

// toolMatcher is a list of AgentOptions tool names, ready to match a
// tool's name.
type toolMatcher struct {
	exact   map[string]bool
	servers map[string]bool // MCP servers all of whose tools match, by their name in tool names
}

func newToolMatcher(names []string) toolMatcher {
	m := toolMatcher{exact: map[string]bool{}, servers: map[string]bool{}}
	for _, n := range names {
		if server, ok := mcpServerPattern(n); ok {
			m.servers[server] = true
			continue
		}
		m.exact[n] = true
	}
	return m
}

func (m toolMatcher) match(name string) bool {
	if m.exact[name] {
		return true
	}
	server, ok := mcp.ServerOf(name)
	return ok && m.servers[server]
}

// mcpServerPattern says whether name stands for every tool of one MCP
// server (mcp__<server> or mcp__<server>__*), and which.
func mcpServerPattern(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok || rest == "" {
		return "", false
	}
	if server, ok := strings.CutSuffix(rest, "__*"); ok && server != "" && !strings.Contains(server, "__") {
		return server, true
	}
	if !strings.Contains(rest, "__") {
		return rest, true
	}
	return "", false
}

// toolFilter is the tools a session's AgentOptions let the model see and
// call; the zero value allows every tool.
type toolFilter struct {
	on       bool // Tools was given
	allowed  toolMatcher
	disallow toolMatcher
}

func newToolFilter(o *AgentOptions) toolFilter {
	f := toolFilter{on: o.Tools != nil, disallow: newToolMatcher(o.DisallowedTools)}
	if f.on {
		f.allowed = newToolMatcher(o.Tools)
	}
	return f
}

// allows says whether a tool of this name may be offered and called.
func (f *toolFilter) allows(name string) bool {
	if f.disallow.match(name) {
		return false
	}
	return !f.on || f.allowed.match(name)
}

// restricts says whether the filter keeps any tool out.
func (f *toolFilter) restricts() bool {
	return f.on || len(f.disallow.exact) > 0 || len(f.disallow.servers) > 0
}

// offered is ts without the tools f keeps out; ts itself when it keeps
// none out (the built-in tools' slice is shared by every request).
func (f *toolFilter) offered(ts []provider.Tool) []provider.Tool {
	if !f.restricts() {
		return ts
	}
	var out []provider.Tool
	for _, t := range ts {
		if f.allows(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// systemPrompt is the system prompt of a request: Loop's (loop), or the
// one the options replace it with, and what they append.
func (o *AgentOptions) systemPrompt(loop string) string {
	sys := loop
	if o.SystemPrompt != "" {
		sys = o.SystemPrompt
	}
	if o.AppendSystemPrompt != "" {
		sys = strings.TrimRight(sys, "\n") + "\n\n" + o.AppendSystemPrompt
	}
	return sys
}

// CheckAgentOptions validates o for sessions working in cwd: every tool
// name must be a built-in tool or name an MCP server configured for cwd
// (config.json's mcpServers, and its workspaces entry for cwd); MaxTurns
// must not be negative. The error is invalid_params and names what is
// wrong.
func (e *Engine) CheckAgentOptions(cwd string, o AgentOptions) error {
	return e.checkAgentOptions(cwd, o, nil)
}

func (e *Engine) checkAgentOptions(cwd string, o AgentOptions, own []string) error {
	if o.MaxTurns < 0 {
		return errorf(CodeInvalidParams, "maxTurns must not be negative, got %d", o.MaxTurns)
	}
	servers := e.mcpServerNames(cwd, own)
	for _, list := range []struct {
		what  string
		names []string
	}{{"tools", o.Tools}, {"disallowedTools", o.DisallowedTools}} {
		for _, n := range list.names {
			if err := checkToolName(n, servers); err != nil {
				return errorf(CodeInvalidParams, "%s: %v", list.what, err)
			}
		}
	}
	return nil
}

// checkToolName says why name names no tool a session could have.
func checkToolName(name string, servers map[string]bool) error {
	if _, ok := tools.Lookup(name); ok {
		return nil
	}
	server, ok := mcpServerPattern(name)
	if !ok {
		server, ok = mcp.ServerOf(name)
	}
	if !ok {
		var builtin []string
		for _, t := range tools.Builtin() {
			builtin = append(builtin, t.Name())
		}
		return fmt.Errorf("no tool is named %q (the built-in tools are %s; MCP tools are named mcp__<server>__<tool>)", name, strings.Join(builtin, ", "))
	}
	if !servers[server] {
		known := make([]string, 0, len(servers))
		for s := range servers {
			known = append(known, s)
		}
		sort.Strings(known)
		if len(known) == 0 {
			return fmt.Errorf("%q names the MCP server %q, and no MCP server is configured", name, server)
		}
		return fmt.Errorf("%q names the MCP server %q, which is not configured (configured: %s)", name, server, strings.Join(known, ", "))
	}
	return nil
}

// mcpServerNames are the MCP servers a session in cwd may have, as tool
// names spell them (mcp.ToolName): config.json's, its workspace entry's
// for cwd, and own (a front end's for the session).
func (e *Engine) mcpServerNames(cwd string, own []string) map[string]bool {
	cfg := e.catalog().config
	names := map[string]bool{}
	add := func(n string) {
		if s, ok := mcp.ServerOf(mcp.ToolName(n, "x")); ok {
			names[s] = true
		}
	}
	for n := range cfg.MCPServers {
		add(n)
	}
	if wc, ok := cfg.workspaceConfig(cwd, e.opts.Getenv); ok {
		for n := range wc.MCPServers {
			add(n)
		}
	}
	for _, n := range own {
		add(n)
	}
	return names
}

// SetAgentOptions replaces the session's AgentOptions after checking them
// (CheckAgentOptions, with the servers the front end named for this
// session too). They hold from the next model request on, for this
// process only.
func (s *Session) SetAgentOptions(o AgentOptions) error {
	s.mu.Lock()
	var own []string
	for n := range s.ownMCPServers {
		own = append(own, n)
	}
	s.mu.Unlock()
	if err := s.e.checkAgentOptions(s.cwd, o, own); err != nil {
		return err
	}
	o.Tools = cloneNames(o.Tools)
	o.DisallowedTools = slices.Clone(o.DisallowedTools)
	f := newToolFilter(&o)
	s.mu.Lock()
	s.agent, s.offer = o, f
	s.mu.Unlock()
	return nil
}

// AgentOptions are the session's, as SetAgentOptions last set them.
func (s *Session) AgentOptions() AgentOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.agent
	o.Tools = cloneNames(o.Tools)
	o.DisallowedTools = slices.Clone(o.DisallowedTools)
	return o
}

// cloneNames copies a tool list, keeping nil apart from empty (Tools: nil
// offers every tool, empty none).
func cloneNames(names []string) []string {
	if names == nil {
		return nil
	}
	return append([]string{}, names...)
}

// maxTurns is the session's AgentOptions.MaxTurns, read at each request
// so that a change holds from the next one on.
func (s *Session) maxTurns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agent.MaxTurns
}
