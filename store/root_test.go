package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveDataRoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("LOOP_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	check := func(flag, want string) {
		t.Helper()
		got, err := ResolveDataRoot(flag)
		if err != nil || got != want {
			t.Fatalf("ResolveDataRoot(%q) = %q, %v; want %q", flag, got, err, want)
		}
	}
	check("", filepath.Join(home, ".local", "share", "loop"))
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	check("", filepath.Join(home, ".local", "share", "loop"))
	t.Setenv("XDG_DATA_HOME", "/xdg")
	check("", "/xdg/loop")
	t.Setenv("LOOP_HOME", "/loophome")
	check("", "/loophome")
	check("/flag/dir/", "/flag/dir")
	wd, _ := os.Getwd()
	check("rel", filepath.Join(wd, "rel"))
}

func TestOpenRootDoesNoIO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	r, err := OpenRoot(dir)
	if err != nil || r.Dir() != dir {
		t.Fatalf("%v %v", r, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("OpenRoot created the directory")
	}
	// Reads of an empty root work without creating it.
	if ws, err := r.Workspaces(); err != nil || len(ws) != 0 {
		t.Fatalf("%v %v", ws, err)
	}
	if s, err := r.List("", ListOptions{}); err != nil || len(s) != 0 {
		t.Fatalf("%v %v", s, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("a read created the directory")
	}
	if _, err := OpenRoot(""); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
}

func TestWorkspaceRegistry(t *testing.T) {
	r, _ := newTestRoot(t)
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	os.Mkdir(proj, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(proj, link)

	w1, err := r.AddWorkspace(proj, "")
	if err != nil {
		t.Fatal(err)
	}
	if w1.Name != "proj" || w1.Cwd != proj || !validID(w1.ID) || w1.ID[14] != '7' {
		t.Fatalf("%+v", w1)
	}
	// The same directory through a symlink is the same workspace; a name
	// renames it.
	w2, err := r.AddWorkspace(link+"/", "Renamed")
	if err != nil || w2.ID != w1.ID || w2.Name != "Renamed" || w2.Cwd != proj {
		t.Fatalf("%+v %v", w2, err)
	}
	w3, _ := r.AddWorkspace(proj, "")
	if w3.Name != "Renamed" {
		t.Fatalf("empty name renamed: %+v", w3)
	}
	other := t.TempDir()
	w4, _ := r.AddWorkspace(other, "other")
	all, err := r.Workspaces()
	if err != nil || len(all) != 2 || all[0].ID != w1.ID || all[1].ID != w4.ID {
		t.Fatalf("%v %v", all, err)
	}
	if got, err := r.Workspace(w4.ID); err != nil || got != w4 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := r.AddWorkspace(filepath.Join(base, "missing"), ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing dir: %v", err)
	}
	f := filepath.Join(base, "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := r.AddWorkspace(f, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("file: %v", err)
	}
	// Removing keeps session files; adding again restores the id.
	s, _ := r.Create(w1.ID, w1.Cwd)
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	if err := r.RemoveWorkspace(w1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Workspace(w1.ID); !errors.Is(err, ErrWorkspaceNotFound) {
		t.Fatalf("removed: %v", err)
	}
	if err := r.RemoveWorkspace(w1.ID); !errors.Is(err, ErrWorkspaceNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	if all, _ := r.Workspaces(); len(all) != 1 {
		t.Fatalf("%v", all)
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Fatal("RemoveWorkspace deleted sessions")
	}
	back, _ := r.AddWorkspace(proj, "")
	if back.ID != w1.ID {
		t.Fatalf("re-added workspace got a new id %s", back.ID)
	}
	if sums, _ := r.List(back.ID, ListOptions{}); len(sums) != 1 {
		t.Fatal("sessions of a re-added workspace lost")
	}
	fi, _ := os.Stat(filepath.Join(r.Dir(), registryFile))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("registry mode %v", fi.Mode())
	}
}

func TestNewPrivateCwd(t *testing.T) {
	r, _ := newTestRoot(t)
	d, err := r.NewPrivateCwd()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d) != r.Dir()+"-workspaces" || !validID(filepath.Base(d)) {
		t.Fatalf("private cwd %s", d)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%v %v", fi, err)
	}
	// An independent session lives there; deleting it keeps the files.
	os.WriteFile(filepath.Join(d, "generated.txt"), []byte("x"), 0o600)
	s, _ := r.Create("", d)
	mustCommit(t, s, history(1), nil, nil)
	s.Delete()
	if _, err := os.Stat(filepath.Join(d, "generated.txt")); err != nil {
		t.Fatal("delete removed working files")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "settings.json")
	if err := WriteFileAtomic(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("%q", b)
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("temp file left")
	}
}
