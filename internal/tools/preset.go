package tools

import (
	"fmt"
	"strings"

	"github.com/loopdev/loop/internal/sandbox"
)

// Preset is a session's permission preset.
type Preset string

// The presets, in the order Presets lists them.
const (
	// PresetReadOnly allows read, ls, grep and find inside the workspace,
	// and bash in the read-only OS sandbox of SandboxPolicy, which writes
	// only in the temp directory (denied where there is no sandbox). It is
	// the default.
	PresetReadOnly Preset = "read-only"
	// PresetWorkspaceWrite also allows write and edit inside the workspace, and
	// bash with the workspace as its working directory, in the OS sandbox
	// of SandboxPolicy (asking before each command where there is none).
	PresetWorkspaceWrite Preset = "workspace-write"
	// PresetAsk is PresetWorkspaceWrite where every write, edit and bash call needs the
	// user's approval; a command the sandbox seems to have stopped may be
	// run again without it, once the user approves that too.
	PresetAsk Preset = "ask"
	// PresetFullAccess allows every tool on any path.
	PresetFullAccess Preset = "full-access"
)

// Presets lists the presets in a stable order, the default first.
func Presets() []Preset {
	return []Preset{PresetReadOnly, PresetWorkspaceWrite, PresetAsk, PresetFullAccess}
}

// ParsePreset returns the preset named s. The empty string is the default,
// read-only; any other unknown name is an error.
func ParsePreset(s string) (Preset, error) {
	if s == "" {
		return PresetReadOnly, nil
	}
	for _, p := range Presets() {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, 0, 4)
	for _, p := range Presets() {
		names = append(names, string(p))
	}
	return "", fmt.Errorf("unknown permission preset %q (known: %s)", s, strings.Join(names, ", "))
}

// Valid reports whether p is one of Presets (the empty string is not).
func (p Preset) Valid() bool {
	_, err := ParsePreset(string(p))
	return err == nil && p != ""
}

// orDefault maps the zero preset to read-only.
func (p Preset) orDefault() Preset {
	if p == "" {
		return PresetReadOnly
	}
	return p
}

// PermissionPrompt is the permission section of the system prompt: what the
// preset lets the model do, in words the model acts on. sb is the OS
// sandbox bash runs in under p (SandboxPolicy), nil where there is none.
// Unknown presets get the read-only text, the most confined, which is also
// what Decide enforces for them (it denies everything).
func PermissionPrompt(p Preset, sb *sandbox.Policy) string {
	const outside = "- Paths outside the workspace (the working directory and everything below it) are denied, " +
		"including paths that leave it through \"..\" or through symbolic links pointing outside.\n"
	const denied = "- A denied call comes back as an error result. Do not retry the same call; " +
		"change the approach or tell the user what you need.\n"
	var b strings.Builder
	b.WriteString("# Permissions\n\n")
	switch p.orDefault() {
	case PresetWorkspaceWrite:
		b.WriteString("Permission preset: workspace-write.\n\n")
		b.WriteString("- read, ls, grep, find, write and edit work on paths inside the workspace.\n")
		b.WriteString(outside)
		if sb != nil {
			b.WriteString("- bash runs shell commands with the workspace as the working directory, in an OS sandbox (Landlock) " +
				"that every process they start inherits: " + sandboxForModel(sb) + ". " +
				"A command that needs more fails (\"Permission denied\", \"Operation not permitted\"); " +
				"do not try to get around the sandbox, tell the user what the command needs.\n")
		} else {
			b.WriteString("- bash runs shell commands with the workspace as the working directory. There is no OS sandbox here, " +
				"so each command needs the user's approval and then runs with the user's full rights; " +
				"keep commands to the workspace and avoid destructive ones.\n")
		}
		b.WriteString(denied)
	case PresetAsk:
		b.WriteString("Permission preset: ask.\n\n")
		b.WriteString("- read, ls, grep and find work on paths inside the workspace without asking.\n")
		b.WriteString("- write, edit and bash each need the user's approval before they run. " +
			"The user may reject a call; then do not repeat it unchanged.\n")
		b.WriteString(outside)
		if sb != nil {
			b.WriteString("- bash runs with the workspace as the working directory, in an OS sandbox (Landlock) once approved: " +
				sandboxForModel(sb) + ". When a command fails with a permission error, the user is offered to run it again without the sandbox.\n")
		} else {
			b.WriteString("- bash runs with the workspace as the working directory and is not sandboxed once approved " +
				"(there is no OS sandbox here): it runs with the user's full rights.\n")
		}
		b.WriteString(denied)
	case PresetFullAccess:
		b.WriteString("Permission preset: full-access.\n\n")
		b.WriteString("- Every tool is allowed on any path, inside or outside the workspace, without approval.\n")
		b.WriteString("- bash runs with the workspace as the working directory and the user's full rights; nothing is sandboxed. " +
			"Be careful with destructive or irreversible commands and with files outside the workspace.\n")
	default:
		b.WriteString("Permission preset: read-only.\n\n")
		b.WriteString("- read, ls, grep and find work on paths inside the workspace.\n")
		b.WriteString("- write and edit are denied. If the task needs file changes, " +
			"say so and ask the user to switch the permission preset to workspace-write, ask or full-access.\n")
		b.WriteString(outside)
		if sb != nil {
			// Not sb.Summary(): see sandboxForModel.
			network := "opens no TCP connection"
			if sb.Network {
				network = "may use the network"
			}
			b.WriteString("- bash runs shell commands with the workspace as the working directory, without approval, in an OS sandbox (Landlock) " +
				"that every process they start inherits: it writes only in the temp directory (not in the workspace), " +
				"cannot read key stores such as ~/.ssh, and " + network + ". " +
				"A command that needs more fails (\"Permission denied\", \"Operation not permitted\"); " +
				"do not try to get around the sandbox, tell the user what the command needs.\n")
		} else {
			b.WriteString("- bash is denied: read-only runs commands only in an OS sandbox, and there is none here. " +
				"If the task needs commands, ask the user to switch the permission preset to workspace-write, ask or full-access.\n")
		}
		b.WriteString(denied)
	}
	return b.String()
}

// sandboxForModel is what the model is told the workspace-write sandbox
// allows: in words, never the machine's paths (sb.Summary names the data
// root, the temp directory and every key store), so that the permission
// text is the same wherever the session runs or a trace of it is
// replayed (loop replay, docs/traces.md) and costs few tokens. The
// configuration's own paths are named by their keys.
func sandboxForModel(sb *sandbox.Policy) string {
	network := "TCP connect and bind are denied"
	if sb.Network {
		network = "the network is allowed"
	}
	return "writes are allowed only in the workspace, its git metadata, the temp directory and the paths " +
		"config.json's sandbox.writable adds; Loop's data directory stays read-only; reading key stores such as ~/.ssh " +
		"(and the paths sandbox.deny adds) is denied; " + network
}
