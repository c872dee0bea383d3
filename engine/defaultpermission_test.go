package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/engine"
)

// The preset a front end asks for (the chat's ask) is what new sessions
// get when config.json names none; config.json's defaults.permission
// still wins, and an explicit option wins over both.
func TestDefaultPermissionOptionAppliesWhenConfigNamesNone(t *testing.T) {
	for _, tc := range []struct {
		name, config, option, explicit, want string
	}{
		{name: "none", want: "read-only"},
		{name: "option", option: "ask", want: "ask"},
		{name: "config wins", config: `,"defaults":{"permission":"workspace-write"}`, option: "ask", want: "workspace-write"},
		{name: "explicit wins", option: "ask", explicit: "full-access", want: "full-access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := `{"providers":{"fake":{"api":"scripted","script":"s.json","models":[{"id":"m1"}]}}` + tc.config + `}`
			writeScriptedConfig(t, root, cfg)
			e, err := engine.New(engine.Options{DataRoot: root, DefaultPermission: tc.option, Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background(), engine.Abort)
			ws, err := e.AddWorkspace(t.TempDir(), "")
			if err != nil {
				t.Fatal(err)
			}
			created, err := e.CreateSession(ws.ID, engine.SessionOptions{Permission: tc.explicit})
			if err != nil {
				t.Fatal(err)
			}
			inMemory, err := e.NewInMemorySession(t.TempDir(), engine.SessionOptions{Permission: tc.explicit})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []*engine.Session{created, inMemory} {
				if got := s.Snapshot().State.PermissionPreset; got != tc.want {
					t.Errorf("preset %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// A model whose provider's key variable is empty says so (loop models),
// without any request; one whose variable is set, or whose provider
// names none, does not.
func TestModelsNameTheKeyVariableThatIsEmpty(t *testing.T) {
	root := t.TempDir()
	cfg := `{"providers":{
		"fake":{"api":"scripted","script":"s.json","models":[{"id":"m1"}]},
		"keyed":{"api":"openai","baseUrl":"http://127.0.0.1:9/v1","apiKeyEnv":"K1","models":[{"id":"a"}]},
		"set":{"api":"openai","baseUrl":"http://127.0.0.1:9/v1","apiKeyEnv":"K2","models":[{"id":"b"}]}}}`
	writeScriptedConfig(t, root, cfg)
	env := map[string]string{"K2": "secret"}
	e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background(), engine.Abort)
	got := map[string]string{}
	for _, m := range e.Models() {
		got[m.Provider] = m.MissingKey
	}
	want := map[string]string{"fake": "", "keyed": "K1", "set": ""}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: MissingKey %q, want %q", p, got[p], w)
		}
	}
	if ref, err := e.DefaultModel(); err != nil || ref.Provider != "fake" || ref.ID != "m1" {
		t.Errorf("DefaultModel %v %v, want fake/m1", ref, err)
	}
}

// writeScriptedConfig writes config.json and the scripted model's script s.json.
func writeScriptedConfig(t *testing.T, root, cfg string) {
	t.Helper()
	for name, data := range map[string]string{"config.json": cfg, "s.json": `{"turns":[]}`} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
