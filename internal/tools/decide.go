package tools

import (
	"encoding/json"
	"fmt"
)

// Decision is what a preset says about one tool call.
type Decision int

const (
	// Allow runs the call.
	Allow Decision = iota
	// Deny returns the reason to the model as a tool error.
	Deny
	// Ask needs the user's approval before the call runs.
	Ask
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Decide says whether preset p lets toolName run with args in the workspace
// cwd, and why not in plain words for the model (or, for Ask, what the user
// is asked to approve). sandboxed says whether bash commands run in the OS
// sandbox here (SandboxPolicy, internal/sandbox).
//
//   - read-only: read, ls, grep, find inside the workspace, and bash in
//     read-only's sandbox (writes only in the temp directory); where there
//     is no sandbox, bash is denied. write and edit are denied.
//   - workspace-write: also write and edit inside the workspace, and bash
//     in the workspace-write sandbox; where there is no sandbox, each bash
//     command asks instead of running with the user's full rights.
//   - ask: reads as workspace-write; write, edit and bash return Ask (bash
//     then runs in the sandbox where there is one).
//   - full-access: everything, anywhere, without validating arguments.
//
// A path argument leaves the workspace when what it finally names (every
// symlink followed; for a file that does not exist yet, its nearest existing
// ancestor resolved) is not cwd or below it; such calls are denied under
// every preset but full-access, and approval cannot override that. Calls
// with invalid arguments are denied with the validation error. Tools that are
// not built in (MCP tools, say) have unknown effects and are treated like
// bash. The empty preset is read-only; an unknown preset denies everything.
func Decide(p Preset, sandboxed bool, toolName string, args json.RawMessage, cwd string) (Decision, string) {
	p = p.orDefault()
	if !p.Valid() {
		return Deny, fmt.Sprintf("the session's permission preset %q is unknown, so every tool call is denied", p)
	}
	if p == PresetFullAccess {
		return Allow, ""
	}
	t, ok := lookupBuiltin(toolName)
	if !ok {
		return decideAccess(p, sandboxed, toolName, accessExec)
	}
	if p == PresetReadOnly && t.access() != accessRead {
		// Denied without looking at the arguments; read-only's sandboxed
		// bash goes on to have them validated like any allowed call.
		if d, why := decideAccess(p, sandboxed, toolName, t.access()); d == Deny {
			return d, why
		}
	}
	a, err := t.parse(args)
	if err != nil {
		return Deny, err.Error()
	}
	for _, path := range t.paths(a) {
		reason, err := escape(cwd, path)
		if err != nil {
			return Deny, fmt.Sprintf("cannot check %s's path against the workspace: %v", toolName, err)
		}
		if reason != "" {
			return Deny, fmt.Sprintf("permission denied (preset %s): %s; only full-access allows paths outside the workspace", p, reason)
		}
	}
	return decideAccess(p, sandboxed, toolName, t.access())
}

// decideAccess applies the preset to a call whose paths (if any) are inside.
func decideAccess(p Preset, sandboxed bool, toolName string, a access) (Decision, string) {
	if a == accessRead {
		return Allow, ""
	}
	switch p {
	case PresetReadOnly:
		if toolName == NameBash && sandboxed {
			return Allow, ""
		}
		if toolName == NameBash {
			return Deny, fmt.Sprintf("permission denied: the session's permission preset is read-only, where %s runs only in an OS sandbox "+
				"that lets it write nowhere but the temp directory, and that sandbox is not available here; "+
				"ask the user to switch to workspace-write or ask (where each command is approved first and then runs with the user's full rights) or full-access if commands are needed", toolName)
		}
		what := "changes files"
		if a == accessExec {
			what = "runs commands"
		}
		return Deny, fmt.Sprintf("permission denied: the session's permission preset is read-only and %s %s; "+
			"ask the user to switch to workspace-write, ask or full-access if it is needed", toolName, what)
	case PresetAsk:
		switch {
		case a == accessExec && toolName == NameBash && sandboxed:
			return Ask, fmt.Sprintf("%s runs a command in the workspace-write sandbox and needs the user's approval", toolName)
		case a == accessExec && toolName == NameBash:
			return Ask, fmt.Sprintf("%s runs a command (not sandboxed: the OS sandbox is not available here) and needs the user's approval", toolName)
		case a == accessExec:
			return Ask, fmt.Sprintf("%s runs a command (not sandboxed) and needs the user's approval", toolName)
		}
		return Ask, fmt.Sprintf("%s changes a file in the workspace and needs the user's approval", toolName)
	case PresetWorkspaceWrite:
		if toolName == NameBash && !sandboxed {
			return Ask, fmt.Sprintf("%s runs a command, and the OS sandbox that would confine it to the workspace is not available here: "+
				"each command needs the user's approval and then runs with the user's full rights", toolName)
		}
	}
	return Allow, ""
}
