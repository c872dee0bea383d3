package tools

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

type pathKind struct {
	name    string
	path    func(f fixture) string
	escapes bool
	why     string // words the denial must contain
}

var pathKinds = []pathKind{
	{name: "inside", path: func(fixture) string { return "file.txt" }},
	{name: "inside-new", path: func(fixture) string { return "newdir/new.txt" }},
	{name: "dotdot-inside", path: func(fixture) string { return "sub/../file.txt" }},
	{name: "dotdot", path: func(fixture) string { return "../outside/secret.txt" }, escapes: true, why: `through ".."`},
	{name: "abs-inside", path: func(f fixture) string { return filepath.Join(f.ws, "file.txt") }},
	{name: "abs-outside", path: func(f fixture) string { return filepath.Join(f.outside, "secret.txt") }, escapes: true, why: "is outside the workspace"},
	{name: "symlink-inside", path: func(fixture) string { return "link_in/inner.txt" }},
	{name: "symlink-escaping", path: func(fixture) string { return "link_out/secret.txt" }, escapes: true, why: "symbolic link"},
	{name: "new-under-escaping-symlink", path: func(fixture) string { return "link_out/newdir/new.txt" }, escapes: true, why: "symbolic link"},
	{name: "dangling-symlink-outside", path: func(fixture) string { return "dangling" }, escapes: true, why: "symbolic link"},
}

// pathArgs gives a valid call of each path-taking tool on path.
func pathArgs(tool, path string) map[string]any {
	switch tool {
	case NameRead, NameLs:
		return map[string]any{"path": path}
	case NameWrite:
		return map[string]any{"path": path, "content": "x"}
	case NameEdit:
		return map[string]any{"path": path, "oldText": "a", "newText": "b"}
	case NameGrep:
		return map[string]any{"pattern": "x", "path": path}
	case NameFind:
		return map[string]any{"pattern": "*", "path": path}
	}
	panic(tool)
}

func isReadTool(tool string) bool {
	return tool == NameRead || tool == NameLs || tool == NameGrep || tool == NameFind
}

// expected is the rule the brief sets, written independently of Decide.
func expected(p Preset, tool string, k pathKind) Decision {
	switch {
	case p == PresetFullAccess:
		return Allow
	case p == PresetReadOnly && !isReadTool(tool):
		return Deny
	case k.escapes:
		return Deny
	case isReadTool(tool):
		return Allow
	case p == PresetAsk:
		return Ask
	}
	return Allow
}

func TestDecideTable(t *testing.T) {
	f := newFixture(t)
	tools := []string{NameRead, NameWrite, NameEdit, NameLs, NameGrep, NameFind}
	n := 0
	for _, p := range Presets() {
		for _, tool := range tools {
			for _, k := range pathKinds {
				n++
				path := k.path(f)
				got, reason := Decide(p, true, tool, js(t, pathArgs(tool, path)), f.ws)
				want := expected(p, tool, k)
				if got != want {
					t.Errorf("%s %s %s (%q): got %v (%s), want %v", p, tool, k.name, path, got, reason, want)
					continue
				}
				if got != Allow && reason == "" {
					t.Errorf("%s %s %s: %v without a reason", p, tool, k.name, got)
				}
				if got == Allow && reason != "" {
					t.Errorf("%s %s %s: allow with reason %q", p, tool, k.name, reason)
				}
				if k.escapes && got == Deny && (p != PresetReadOnly || isReadTool(tool)) && !strings.Contains(reason, k.why) {
					t.Errorf("%s %s %s: reason %q does not say %q", p, tool, k.name, reason, k.why)
				}
			}
		}
	}
	if n != 4*6*len(pathKinds) {
		t.Fatalf("covered %d cases", n)
	}
}

func TestDecideBashAndOthers(t *testing.T) {
	f := newFixture(t)
	bash := js(t, map[string]any{"command": "cat /etc/passwd"})
	cases := []struct {
		p    Preset
		tool string
		args json.RawMessage
		want Decision
		why  string
	}{
		{PresetReadOnly, NameBash, bash, Allow, ""}, // in read-only's sandbox
		{PresetWorkspaceWrite, NameBash, bash, Allow, ""},
		{PresetAsk, NameBash, bash, Ask, "approval"},
		{PresetFullAccess, NameBash, bash, Allow, ""},
		{"", NameBash, bash, Allow, ""}, // the default preset is read-only
		{"", NameEdit, js(t, map[string]any{"path": "file.txt", "edits": []any{}}), Deny, "read-only"},
		{PresetReadOnly, NameBash, json.RawMessage(`{}`), Deny, `missing required field "command"`},
		{"", NameRead, js(t, map[string]any{"path": "file.txt"}), Allow, ""},
		{"sudo", NameRead, js(t, map[string]any{"path": "file.txt"}), Deny, "unknown"},
		// Tools that are not built in are treated like bash.
		{PresetReadOnly, "mcp_fetch", json.RawMessage(`{"url":"x"}`), Deny, "read-only"},
		{PresetWorkspaceWrite, "mcp_fetch", json.RawMessage(`{"url":"x"}`), Allow, ""},
		{PresetAsk, "mcp_fetch", json.RawMessage(`{"url":"x"}`), Ask, "approval"},
		// Invalid arguments are denied with the validation error.
		{PresetWorkspaceWrite, NameWrite, json.RawMessage(`{"path":"a"}`), Deny, `missing required field "content"`},
		{PresetReadOnly, NameRead, json.RawMessage(`{"path":3}`), Deny, `field "path" must be a string`},
		{PresetAsk, NameEdit, json.RawMessage(`{"path":"a","edits":[{"oldText":"x"}]}`), Deny, `edits[0]: missing required field "newText"`},
		// full-access does not look at arguments at all.
		{PresetFullAccess, NameWrite, json.RawMessage(`{"path":"/etc/x"}`), Allow, ""},
		// Omitted directory arguments mean the workspace.
		{PresetReadOnly, NameLs, json.RawMessage(`{}`), Allow, ""},
		{PresetReadOnly, NameGrep, json.RawMessage(`{"pattern":"x"}`), Allow, ""},
		{PresetReadOnly, NameFind, json.RawMessage(`{"pattern":"*"}`), Allow, ""},
		// read-only reports the tool, not the path, for writes outside.
		{PresetReadOnly, NameWrite, js(t, map[string]any{"path": "/etc/x", "content": ""}), Deny, "read-only"},
	}
	for _, c := range cases {
		got, reason := Decide(c.p, true, c.tool, c.args, f.ws)
		if got != c.want || !strings.Contains(reason, c.why) {
			t.Errorf("Decide(%q, %s, %s) = %v %q, want %v mentioning %q", c.p, c.tool, c.args, got, reason, c.want, c.why)
		}
	}
}

// A workspace reached through a symlink (as /tmp is on macOS) still
// contains its own files, named either way.
func TestDecideSymlinkedWorkspace(t *testing.T) {
	f := newFixture(t)
	alias := filepath.Join(f.base, "alias")
	mustSymlink(t, "ws", alias)
	for _, path := range []string{"file.txt", filepath.Join(alias, "file.txt"), filepath.Join(f.ws, "file.txt")} {
		if d, reason := Decide(PresetReadOnly, true, NameRead, js(t, map[string]any{"path": path}), alias); d != Allow {
			t.Errorf("%s under aliased cwd: %v %s", path, d, reason)
		}
	}
	if d, _ := Decide(PresetReadOnly, true, NameRead, js(t, map[string]any{"path": "../outside/secret.txt"}), alias); d != Deny {
		t.Errorf("escape from aliased cwd allowed")
	}
}

func TestDecisionString(t *testing.T) {
	if Allow.String() != "allow" || Deny.String() != "deny" || Ask.String() != "ask" || Decision(9).String() != "Decision(9)" {
		t.Fatal("Decision.String")
	}
}

func TestRealPathLoop(t *testing.T) {
	f := newFixture(t)
	mustSymlink(t, "loop2", filepath.Join(f.ws, "loop1"))
	mustSymlink(t, "loop1", filepath.Join(f.ws, "loop2"))
	d, reason := Decide(PresetReadOnly, true, NameRead, js(t, map[string]any{"path": "loop1/x"}), f.ws)
	if d != Deny || !strings.Contains(reason, "too many levels of symbolic links") {
		t.Fatalf("symlink loop: %v %q", d, reason)
	}
}

// read-only's bash runs only in its OS sandbox: where there is none it is
// denied, saying why and what the user can switch to, never run with the
// user's full rights.
func TestReadOnlyBashIsDeniedWhereThereIsNoSandbox(t *testing.T) {
	f := newFixture(t)
	args := js(t, map[string]any{"command": "ls"})
	for _, p := range []Preset{PresetReadOnly, ""} {
		d, reason := Decide(p, false, NameBash, args, f.ws)
		if d != Deny {
			t.Errorf("%q without a sandbox: %v %s", p, d, reason)
		}
		for _, w := range []string{"read-only", "sandbox", "not available", "workspace-write", "full-access"} {
			if !strings.Contains(reason, w) {
				t.Errorf("%q: reason lacks %q: %s", p, w, reason)
			}
		}
		if d, reason := Decide(p, true, NameBash, args, f.ws); d != Allow {
			t.Errorf("%q sandboxed: %v %s", p, d, reason)
		}
	}
	for _, sandboxed := range []bool{true, false} {
		if d, _ := Decide(PresetReadOnly, sandboxed, NameWrite, js(t, map[string]any{"path": "x", "content": "y"}), f.ws); d != Deny {
			t.Errorf("read-only write (sandbox %v): %v", sandboxed, d)
		}
		if d, _ := Decide(PresetReadOnly, sandboxed, "mcp_fetch", json.RawMessage(`{"url":"x"}`), f.ws); d != Deny {
			t.Errorf("read-only non-builtin tool (sandbox %v): %v", sandboxed, d)
		}
	}
}

// Where there is no OS sandbox, workspace-write's bash asks before each
// command instead of running it with the user's full rights, and ask's
// approval request says the command will not be sandboxed.
func TestWorkspaceWriteBashAsksWhereThereIsNoSandbox(t *testing.T) {
	f := newFixture(t)
	args := js(t, map[string]any{"command": "ls"})
	if d, reason := Decide(PresetWorkspaceWrite, true, NameBash, args, f.ws); d != Allow {
		t.Errorf("sandboxed: %v %s", d, reason)
	}
	if d, reason := Decide(PresetWorkspaceWrite, false, NameBash, args, f.ws); d != Ask || !strings.Contains(reason, "sandbox") || !strings.Contains(reason, "not available") {
		t.Errorf("no sandbox: %v %s", d, reason)
	}
	if d, reason := Decide(PresetAsk, true, NameBash, args, f.ws); d != Ask || !strings.Contains(reason, "in the workspace-write sandbox") {
		t.Errorf("ask, sandboxed: %v %s", d, reason)
	}
	if d, reason := Decide(PresetAsk, false, NameBash, args, f.ws); d != Ask || !strings.Contains(reason, "not sandboxed") {
		t.Errorf("ask, no sandbox: %v %s", d, reason)
	}
	if d, _ := Decide(PresetFullAccess, false, NameBash, args, f.ws); d != Allow {
		t.Errorf("full-access: %v", d)
	}
	if d, _ := Decide(PresetWorkspaceWrite, false, NameWrite, js(t, map[string]any{"path": "x", "content": "y"}), f.ws); d != Allow {
		t.Errorf("workspace-write write without a sandbox: %v", d)
	}
}
