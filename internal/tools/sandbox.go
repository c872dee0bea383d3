package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loopdev/loop/internal/sandbox"
)

// SandboxConfig is what a preset's OS sandbox is built from besides the
// workspace: config.json's "sandbox" object and where things are
// (docs/configuration.md, "The sandbox").
type SandboxConfig struct {
	// Network allows TCP connect and bind (sandbox.network).
	Network bool
	// Writable are more writable paths (sandbox.writable), absolute.
	Writable []string
	// Deny are more unreadable paths (sandbox.deny), absolute; the key
	// stores of sandbox.DefaultDeny(Home) are always denied.
	Deny []string
	// Home is the user's home directory ("" denies no default path).
	Home string
	// DataRoot is Loop's data root, read-only to sandboxed commands.
	DataRoot string
	// TempDir is the system temp directory, writable under every preset
	// that has a sandbox.
	TempDir string
}

// SandboxPolicy is the OS sandbox of preset p for a session working in
// cwd, nil for full-access (which has none):
//
//   - read-only: writes only in the temp directory;
//   - workspace-write and ask: writes in cwd, its git metadata (the .git
//     directory, or a worktree's git directory and the common one), the
//     temp directory and the configured writable paths;
//
// and under both: the data root read-only, the key stores and the
// configured deny paths unreadable, no TCP unless the configuration
// allows the network. An unknown preset gets read-only's sandbox.
func SandboxPolicy(p Preset, cwd string, c SandboxConfig) *sandbox.Policy {
	p = p.orDefault()
	if p == PresetFullAccess {
		return nil
	}
	// ask's sandbox is workspace-write's, and named so.
	pol := &sandbox.Policy{Name: string(PresetWorkspaceWrite), Network: c.Network}
	if p == PresetWorkspaceWrite || p == PresetAsk {
		pol.Writable = append(pol.Writable, cwd)
		pol.Writable = append(pol.Writable, gitDirs(cwd)...)
	} else {
		pol.Name = string(PresetReadOnly)
	}
	if c.TempDir != "" {
		pol.Writable = append(pol.Writable, c.TempDir)
	}
	if p == PresetWorkspaceWrite || p == PresetAsk {
		pol.Writable = append(pol.Writable, c.Writable...)
	}
	if c.DataRoot != "" {
		pol.ReadOnly = []string{c.DataRoot}
	}
	pol.Deny = append(sandbox.DefaultDeny(c.Home), c.Deny...)
	pol.Writable = dedupe(pol.Writable)
	return pol
}

func dedupe(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// gitDirs finds the git metadata of the repository holding cwd: its .git
// directory, or for a worktree (or a submodule) the git directory its
// .git file names and the common directory that one names, where commits
// write their objects.
func gitDirs(cwd string) []string {
	for dir := cwd; ; {
		dotgit := filepath.Join(dir, ".git")
		fi, err := os.Lstat(dotgit)
		if err == nil {
			if fi.IsDir() {
				return []string{dotgit}
			}
			return gitFileDirs(dir, dotgit)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// gitFileDirs reads a .git file ("gitdir: PATH") and the commondir file of
// the directory it names.
func gitFileDirs(dir, dotgit string) []string {
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return nil
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	out := []string{filepath.Clean(gitdir)}
	if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		out = append(out, filepath.Clean(common))
	}
	return out
}

// sandboxNote is appended to the result of a command that failed in the
// sandbox. Loop cannot tell from outside whether the sandbox caused the
// failure, so it says what the sandbox allows and how to get more.
// read-only's sandbox is not widened by sandbox.writable, so its note
// names the preset that writes the workspace instead.
func sandboxNote(p *sandbox.Policy) string {
	more := "the ask preset offers to run such a command again without the sandbox, full-access runs commands without it, " +
		"and config.json's sandbox.writable and sandbox.network widen it"
	if p.Name == string(PresetReadOnly) {
		more = "the workspace-write preset lets commands write the workspace (and config.json's sandbox.writable paths), " +
			"the ask preset offers to run such a command again without the sandbox, full-access runs commands without it, " +
			"and config.json's sandbox.network allows the network"
	}
	return "\n[sandbox: the command ran in Loop's " + p.Name + " OS sandbox (Landlock), where " + p.Summary() + ". " +
		"If it failed because the sandbox denied it (\"Permission denied\" or \"Operation not permitted\" on a path outside those, " +
		"or a refused TCP connection), it cannot succeed in this sandbox: tell the user what it needs. " +
		"The user can allow more: " + more + ".]"
}

// deniedWords are what a command's output says when the sandbox refused
// it, among other causes.
var deniedWords = []string{"permission denied", "operation not permitted", "eacces", "eperm"}

// looksDenied reports whether output mentions an error a sandbox denial
// gives. It is a hint for offering to run the command again without the
// sandbox, not a proof.
func looksDenied(output string) bool {
	low := strings.ToLower(output)
	return slices.ContainsFunc(deniedWords, func(w string) bool { return strings.Contains(low, w) })
}
