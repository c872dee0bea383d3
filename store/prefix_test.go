package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The command line's id prefixes (docs/cli.md, "Session ids") find the
// stored sessions of every scope whose ids start with the prefix, and
// nothing else: not a directory without a header, nor another name.
func TestIDsWithPrefixFindsTheSessionsOfEveryScope(t *testing.T) {
	r, _ := newTestRoot(t)
	cwd := t.TempDir()
	ws, err := r.AddWorkspace(cwd, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, scope := range []string{ws.ID, ws.ID, ""} {
		dir := cwd
		if scope == "" {
			dir = t.TempDir()
		}
		s, err := r.Create(scope, dir)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
		s.Close()
	}
	// A directory named like an id but holding no header is no session.
	stray := "ffffffff-ffff-7fff-bfff-ffffffffffff"
	if err := os.MkdirAll(filepath.Join(r.Layout().Scope(ws.ID), stray), 0o700); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{ids[0][:1], ids},
		{ids[0], ids[:1]},
		{ids[2][:35], ids[2:]},
		{"f", nil},
		{"zz", nil},
	} {
		got, err := r.IDsWithPrefix(tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("IDsWithPrefix(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
	if _, err := r.IDsWithPrefix(""); err == nil {
		t.Error("an empty prefix was taken")
	}
}
