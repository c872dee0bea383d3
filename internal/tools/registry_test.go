package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBuiltinAndLookup(t *testing.T) {
	var names []string
	for _, tool := range Builtin() {
		names = append(names, tool.Name())
		if got, ok := Lookup(tool.Name()); !ok || got.Name() != tool.Name() {
			t.Errorf("Lookup(%s)", tool.Name())
		}
		if len(tool.Description()) < 40 {
			t.Errorf("%s: thin description", tool.Name())
		}
		// Every schema is an object schema listing its properties.
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Schema(), &s); err != nil || s.Type != "object" || len(s.Properties) == 0 || s.Additional == nil || *s.Additional {
			t.Errorf("%s schema: %s (%v)", tool.Name(), tool.Schema(), err)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %s not a property", tool.Name(), r)
			}
		}
		if _, ok := tool.(builtin); !ok {
			t.Errorf("%s does not implement builtin", tool.Name())
		}
	}
	if got := strings.Join(names, ","); got != "read,write,edit,bash,ls,grep,find" {
		t.Fatalf("order: %s", got)
	}
	if _, ok := Lookup("rm"); ok {
		t.Fatal("Lookup(rm)")
	}
	// Builtin hands out a fresh slice.
	b := Builtin()
	b[0] = nil
	if Builtin()[0] == nil {
		t.Fatal("Builtin shares its slice")
	}
}

func TestEditSchemaHasItems(t *testing.T) {
	tool, _ := Lookup(NameEdit)
	var s struct {
		Properties struct {
			Edits struct {
				Type  string `json:"type"`
				Items struct {
					Required []string `json:"required"`
				} `json:"items"`
			} `json:"edits"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Schema(), &s); err != nil || s.Properties.Edits.Type != "array" ||
		strings.Join(s.Properties.Edits.Items.Required, ",") != "oldText,newText" {
		t.Fatalf("edit schema: %s", tool.Schema())
	}
}

func TestKindAndTitle(t *testing.T) {
	for name, kind := range map[string]string{NameRead: "read", NameLs: "read", NameWrite: "edit", NameEdit: "edit", NameBash: "execute", NameGrep: "search", NameFind: "search", "mcp": "other"} {
		if Kind(name) != kind {
			t.Errorf("Kind(%s) = %s", name, Kind(name))
		}
	}
	cases := map[string]struct {
		name string
		args string
	}{
		"Read a.go":                              {NameRead, `{"path":"a.go"}`},
		"List .":                                 {NameLs, `{}`},
		"Run go test ./... ...":                  {NameBash, `{"command":"go test ./...\necho done"}`},
		"Run " + strings.Repeat("x", 77) + "...": {NameBash, `{"command":"` + strings.Repeat("x", 100) + `"}`},
		"write":                                  {NameWrite, `{"bad":1}`},
		"mcp_x":                                  {"mcp_x", `{}`},
	}
	for want, c := range cases {
		if got := Title(c.name, json.RawMessage(c.args)); got != want {
			t.Errorf("Title(%s, %s) = %q, want %q", c.name, c.args, got, want)
		}
	}
}

func TestPresets(t *testing.T) {
	if got := Presets(); len(got) != 4 || got[0] != PresetReadOnly {
		t.Fatalf("Presets: %v", got)
	}
	for _, p := range Presets() {
		if got, err := ParsePreset(string(p)); err != nil || got != p {
			t.Errorf("ParsePreset(%s) = %v, %v", p, got, err)
		}
		if !p.Valid() {
			t.Errorf("%s not valid", p)
		}
	}
	if got, err := ParsePreset(""); err != nil || got != PresetReadOnly {
		t.Errorf("ParsePreset(\"\") = %v, %v", got, err)
	}
	if _, err := ParsePreset("yolo"); err == nil || !strings.Contains(err.Error(), "read-only, workspace-write, ask, full-access") {
		t.Errorf("ParsePreset(yolo): %v", err)
	}
	if Preset("").Valid() || Preset("yolo").Valid() {
		t.Error("invalid presets are valid")
	}
}

// The permission text the model gets names no path of the machine (the
// temp directory, the home's key stores, the data root), so it is the
// same wherever a session runs and wherever its trace is replayed.
func TestPermissionPromptNamesNoPathOfTheMachine(t *testing.T) {
	for _, p := range Presets() {
		a := PermissionPrompt(p, SandboxPolicy(p, "/ws", SandboxConfig{TempDir: "/tmp", Home: "/home/a", DataRoot: "/home/a/.loop"}))
		b := PermissionPrompt(p, SandboxPolicy(p, "/ws", SandboxConfig{TempDir: "/var/tmp/x", Home: "/home/b", DataRoot: "/srv/loop"}))
		if a != b {
			t.Errorf("%s: the permission text depends on the machine:\n%s\n---\n%s", p, a, b)
		}
	}
}

func TestPermissionPrompt(t *testing.T) {
	cases := map[Preset][]string{
		PresetReadOnly:       {"read-only", "write and edit are denied", "bash runs shell commands", "without approval", "OS sandbox (Landlock)", "writes only in the temp directory (not in the workspace)", "opens no TCP connection", "outside the workspace"},
		PresetWorkspaceWrite: {"workspace-write", "OS sandbox (Landlock)", "writes are allowed only in the workspace, its git metadata, the temp directory", "outside the workspace"},
		PresetAsk:            {"Permission preset: ask", "need the user's approval", "outside the workspace"},
		PresetFullAccess:     {"full-access", "any path", "nothing is sandboxed"},
		"":                   {"read-only"},
	}
	for p, wants := range cases {
		got := PermissionPrompt(p, SandboxPolicy(p, "/ws", SandboxConfig{TempDir: "/tmp"}))
		if !strings.HasPrefix(got, "# Permissions\n") {
			t.Errorf("%s: %q", p, got)
		}
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("PermissionPrompt(%q) lacks %q:\n%s", p, w, got)
			}
		}
	}
	if got := PermissionPrompt(PresetWorkspaceWrite, nil); !strings.Contains(got, "There is no OS sandbox here") {
		t.Errorf("workspace-write without a sandbox:\n%s", got)
	}
	if got := PermissionPrompt(PresetReadOnly, nil); !strings.Contains(got, "bash is denied") || !strings.Contains(got, "there is none here") {
		t.Errorf("read-only without a sandbox:\n%s", got)
	}
	if strings.Contains(PermissionPrompt(PresetFullAccess, nil), "denied") {
		t.Error("full-access prompt mentions denials")
	}
}
