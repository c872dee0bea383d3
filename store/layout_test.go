package store

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLayoutNamesThePathsOfDocsStorage: the layout's names are the ones
// docs/storage.md and docs/configuration.md give, and the store writes
// where the layout says.
func TestLayoutNamesThePathsOfDocsStorage(t *testing.T) {
	const ws, id = "0190a0a0-0000-7000-8000-000000000001", "0190a0a0-0000-7000-8000-000000000002"
	l := NewLayout("/data/loop")
	for _, c := range []struct{ got, want string }{
		{l.Config(), "/data/loop/config.json"},
		{l.Preferences(), "/data/loop/preferences.json"},
		{l.Registry(), "/data/loop/workspaces.json"},
		{l.Skills(), "/data/loop/skills"},
		{l.Sessions(), "/data/loop/sessions"},
		{l.Scope(""), "/data/loop/sessions/global"},
		{l.Session(ws, id), "/data/loop/sessions/" + ws + "/" + id},
		{l.Session("", id), "/data/loop/sessions/global/" + id},
		{l.Traces(), "/data/loop/traces"},
		{l.Trace(ws, id), "/data/loop/traces/" + ws + "/" + id},
		{l.Trace("", id), "/data/loop/traces/global/" + id},
		{l.PrivateCwd(id), "/data/loop-workspaces/" + id},
		{l.Recovery("", id, 42), "/data/loop/sessions/global/loop-recovery-" + id + "-42.json"},
		{l.Path("model.json"), "/data/loop/model.json"},
		{l.Path("/abs/model.json"), "/abs/model.json"},
		{SessionHeader(l.Session(ws, id)), "/data/loop/sessions/" + ws + "/" + id + "/header.json"},
		{WorkspaceSkills("/src/proj"), "/src/proj/.loop/skills"},
		{ScopeWorkspace("global") + "|" + ScopeWorkspace(ws), "|" + ws},
	} {
		if c.got != filepath.FromSlash(c.want) {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}

	root := t.TempDir()
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	s, err := r.Create("", cwd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := r.Layout().Session("", s.ID()); s.Dir() != want {
		t.Errorf("session in %s, the layout says %s", s.Dir(), want)
	}
	if _, err := os.Stat(SessionHeader(s.Dir())); err != nil {
		t.Errorf("no header where the layout says: %v", err)
	}
	if _, err := r.AddWorkspace(cwd, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Layout().Registry()); err != nil {
		t.Errorf("no registry where the layout says: %v", err)
	}
}
