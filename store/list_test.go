package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListFiltersAndOrders(t *testing.T) {
	r, ffs := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "")
	mk := func(rounds int) *Session {
		s, err := r.Create(ws.ID, ws.Cwd)
		if err != nil {
			t.Fatal(err)
		}
		if rounds > 0 {
			mustCommit(t, s, history(rounds), nil, nil)
		}
		return s
	}
	a := mk(1)
	empty := mk(0)
	b := mk(2)
	c := mk(1)
	archived := mk(1)
	archivedEmpty := mk(0)
	for _, s := range []*Session{archived, archivedEmpty} {
		s.SetArchived(true)
	}
	c.SetPinned(true)
	// Activity reorders: a commits last.
	mustCommit(t, a, history(2), nil, nil)
	for _, s := range []*Session{a, empty, b, c, archived, archivedEmpty} {
		s.Close()
	}
	// Another session in the independent collection stays out.
	g, _ := r.Create("", t.TempDir())
	mustCommit(t, g, history(1), nil, nil)
	g.Close()

	ffs.ResetOps()
	sums, err := r.List(ws.ID, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ss []Summary) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	if got, want := ids(sums), []string{a.ID(), c.ID(), b.ID()}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("list %v, want %v", got, want)
	}
	for _, entry := range ffs.Ops() {
		if strings.Contains(entry, ".jsonl") || strings.Contains(entry, indexFile) {
			t.Fatalf("List read a log: %v", ffs.Ops())
		}
	}
	if s := sums[0]; s.MessageCount != 8 || s.UserMessageCount != 2 || *s.WorkspaceID != ws.ID || s.Archived {
		t.Fatalf("summary %+v", s)
	}
	if sums[1].PinnedAt == nil {
		t.Fatal("pin missing from summary")
	}
	arch, err := r.List(ws.ID, ListOptions{Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(arch); len(got) != 2 || !(got[0] == archivedEmpty.ID() || got[1] == archivedEmpty.ID()) {
		t.Fatalf("archived list %v", got)
	}
	if !arch[0].Archived || arch[0].ArchivedAt == nil {
		t.Fatalf("archived summary %+v", arch[0])
	}
	gl, err := r.List("", ListOptions{})
	if err != nil || len(gl) != 1 || gl[0].ID != g.ID() || gl[0].WorkspaceID != nil {
		t.Fatalf("global list %v %v", gl, err)
	}
	// Find locates each scope.
	if scope, err := r.Find(b.ID()); err != nil || scope != ws.ID {
		t.Fatalf("Find %q %v", scope, err)
	}
	if scope, err := r.Find(g.ID()); err != nil || scope != "" {
		t.Fatalf("Find global %q %v", scope, err)
	}
	if _, err := r.Find(newID()); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Find unknown %v", err)
	}
	// An unknown scope directory lists empty.
	if sums, err := r.List(newID(), ListOptions{}); err != nil || len(sums) != 0 {
		t.Fatalf("empty scope %v %v", sums, err)
	}
}

func TestListExcludesOtherFormatsUntouched(t *testing.T) {
	r, _ := newTestRoot(t)
	good, _ := r.Create("", t.TempDir())
	mustCommit(t, good, history(1), nil, nil)
	good.Close()
	scope := filepath.Dir(good.Dir())
	others := map[string]string{
		newID(): `{"format":"loop-session","version":3,"id":"whatever","messageCount":"many"}`,
		newID(): `{"format":"other-tool","stuff":[1,2,3]}`,
		newID(): `{"type":"session","version":3,"id":"x","cwd":"/tmp"}`,
	}
	for id, content := range others {
		os.MkdirAll(filepath.Join(scope, id), 0o700)
		os.WriteFile(filepath.Join(scope, id, headerFile), []byte(content), 0o600)
	}
	// Directories without a header and stray files are not sessions.
	os.MkdirAll(filepath.Join(scope, newID()), 0o700)
	os.WriteFile(filepath.Join(scope, "README"), []byte("x"), 0o600)
	before := snapshotDir(t, scope)
	sums, err := r.List("", ListOptions{})
	if err != nil || len(sums) != 1 || sums[0].ID != good.ID() {
		t.Fatalf("list %v %v", sums, err)
	}
	// Creating and opening supported sessions still works.
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if o, err := r.Open("", good.ID()); err != nil {
		t.Fatal(err)
	} else {
		o.Close()
	}
	for id := range others {
		if _, err := r.Find(id); !errors.Is(err, ErrSessionNotFound) {
			t.Errorf("Find excluded %s: %v", id, err)
		}
	}
	after := snapshotDir(t, scope)
	for name, content := range before {
		if after[name] != content {
			t.Fatalf("%s changed", name)
		}
	}
}

func TestListReportsMalformedCurrentFormat(t *testing.T) {
	r, _ := newTestRoot(t)
	good, _ := r.Create("", t.TempDir())
	mustCommit(t, good, history(1), nil, nil)
	good.Close()
	bad, _ := r.Create("", t.TempDir())
	mustCommit(t, bad, history(1), nil, nil)
	bad.Close()
	hpath := filepath.Join(bad.Dir(), headerFile)
	os.WriteFile(hpath, []byte(`{"format":"loop-session","version":1,"id":"nope"}`), 0o600)
	sums, err := r.List("", ListOptions{})
	var lerr *ListError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &lerr) || len(lerr.Problems) != 1 || !strings.Contains(err.Error(), hpath) {
		t.Fatalf("err %v", err)
	}
	if len(sums) != 1 || sums[0].ID != good.ID() {
		t.Fatalf("valid summaries with the error: %v", sums)
	}
	// A storage failure is an error with no summaries.
	if os.Geteuid() != 0 {
		os.Chmod(hpath, 0)
		defer os.Chmod(hpath, 0o600)
		if sums, err := r.List("", ListOptions{}); err == nil || sums != nil {
			t.Fatalf("unreadable header: %v %v", sums, err)
		}
	}
}
