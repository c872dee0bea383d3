// Package mcp is Loop's client for Model Context Protocol servers.
//
// A Manager owns the servers of one working directory: it starts stdio
// servers as child processes (or connects to streamable HTTP servers),
// lists their tools under namespaced names ("mcp__<server>__<tool>"),
// forwards calls, and restarts servers that die, with exponential backoff.
// The engine builds one Manager per live session cwd, offers Tools() to the
// model, routes calls whose name satisfies IsMCPTool to Call, and publishes
// Status() in the session snapshot whenever OnChange fires.
package mcp
