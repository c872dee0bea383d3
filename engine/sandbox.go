package engine

import (
	"os"
	"path/filepath"

	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/tools"
)

// SandboxStatus says whether this system can run bash commands and MCP
// stdio servers in an OS sandbox (docs/configuration.md, "The sandbox").
type SandboxStatus struct {
	// Available is true when the sandbox is applied.
	Available bool
	// Mechanism names what enforces it ("landlock").
	Mechanism string
	// ABI is the kernel's Landlock ABI version (0: none).
	ABI int
	// Reason says why the sandbox is not available; empty when it is.
	Reason string
}

// String is the status in a few words, for logs and banners.
func (s SandboxStatus) String() string { return sandbox.Status(s).String() }

// Sandbox reports what the OS sandbox can do in this process.
func (e *Engine) Sandbox() SandboxStatus { return *e.opts.Sandbox }

// sandboxName names the sandbox of preset p without building it (no file
// system access, so it may be asked with locks held): "" where there is
// none.
func (e *Engine) sandboxName(p tools.Preset) string {
	if !e.opts.Sandbox.Available {
		return ""
	}
	switch p {
	case tools.PresetFullAccess:
		return ""
	case tools.PresetWorkspaceWrite, tools.PresetAsk:
		return string(tools.PresetWorkspaceWrite)
	}
	return string(tools.PresetReadOnly)
}

// sandboxPolicy is the OS sandbox of preset p for commands a session in
// cwd runs: nil for full-access, and nil where there is no sandbox (the
// callers then ask or refuse, never run a confined preset's command
// silently unconfined).
func (e *Engine) sandboxPolicy(p tools.Preset, cwd string) *sandbox.Policy {
	if !e.opts.Sandbox.Available {
		return nil
	}
	cfg := e.catalog().config.Sandbox
	home := e.opts.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	path := func(s string) string {
		s = sandbox.HomePath(expandEnv(s, e.opts.Getenv), home)
		if !filepath.IsAbs(s) {
			s = filepath.Join(cwd, s)
		}
		return filepath.Clean(s)
	}
	c := tools.SandboxConfig{
		Network:  cfg.Network,
		Home:     home,
		DataRoot: e.opts.DataRoot,
		TempDir:  os.TempDir(),
	}
	for _, w := range cfg.Writable {
		c.Writable = append(c.Writable, path(w))
	}
	for _, d := range cfg.Deny {
		c.Deny = append(c.Deny, path(d))
	}
	return tools.SandboxPolicy(p, cwd, c)
}

// SandboxSummary says what the OS sandbox of the session's preset allows
// its bash commands and MCP stdio servers, for a front end to show (the
// chat's banner and /permission); "" when they run without one
// (full-access, or no sandbox here: Engine.Sandbox says why).
func (s *Session) SandboxSummary() string {
	p := s.e.sandboxPolicy(tools.Preset(s.st.Permission()), s.cwd)
	if p == nil {
		return ""
	}
	return p.Name + " sandbox: " + p.Summary()
}
