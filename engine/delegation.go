package engine

import (
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/tools"
)

// The engine's tools and MCP client live in internal packages; these names
// let a Go program outside the module use the parts of them the engine's
// API takes and returns.
type (
	// ClientFS reads and writes files through the front end (an ACP
	// editor's buffers) instead of the disk; see Session.SetClientTools.
	ClientFS = tools.ClientFS
	// ClientTerminal runs bash in the front end's terminal.
	ClientTerminal = tools.ClientTerminal
	// MCPServerConfig is one MCP server a front end names for a session
	// (docs/mcp.md); see Session.SetMCPServers.
	MCPServerConfig = mcp.ServerConfig
	// MCPServerStatus is one MCP server's state in a snapshot.
	MCPServerStatus = mcp.ServerStatus
)
