package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateWithWritesSettingsInTheFirstHeader(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "w")
	s, err := r.CreateWith(ws.ID, ws.Cwd, func(h *Header) {
		h.Model = &ModelRef{Provider: "p", ID: "m"}
		h.Effort, h.Permission = "low", "ask"
		h.ID = "not-mine" // owned by the store: ignored
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.IsDraft() || !s.Persistent() {
		t.Fatalf("draft=%v persistent=%v", s.IsDraft(), s.Persistent())
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), headerFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(data, headerFile)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != s.ID() || h.Model == nil || h.Model.ID != "m" || h.Effort != "low" || h.Permission != "ask" || h.MessageCount != 0 {
		t.Fatalf("header on disk %+v", h)
	}
	s.Close()
	again, err := r.Open(ws.ID, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.Header(); got.Permission != "ask" || got.Model.Provider != "p" {
		t.Fatalf("reopened header %+v", got)
	}
}

func TestCreateWithRejectsBadMetadataAndWritesNothing(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "w")
	_, err := r.CreateWith(ws.ID, ws.Cwd, func(h *Header) { h.TitleSource = "bogus" })
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
	entries, _ := os.ReadDir(filepath.Join(r.Dir(), "sessions", ws.ID))
	if len(entries) != 0 {
		t.Fatalf("a rejected creation left %v", entries)
	}
	if _, err := r.CreateWith(ws.ID, filepath.Join(t.TempDir(), "gone"), nil); !errors.Is(err, ErrCwdMissing) {
		t.Fatalf("missing cwd: %v", err)
	}
}

func TestMostRecentIncludesEmptySessionsAndSkipsArchived(t *testing.T) {
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "w")
	if _, found, err := r.MostRecent(ws.ID); err != nil || found {
		t.Fatalf("empty scope: found=%v err=%v", found, err)
	}
	s1, _ := r.Create(ws.ID, ws.Cwd)
	mustCommit(t, s1, history(1), nil, nil)
	s2, _ := r.Create(ws.ID, ws.Cwd) // empty, but newer
	id, found, err := r.MostRecent(ws.ID)
	if err != nil || !found || id != s2.ID() {
		t.Fatalf("got %s %v %v, want the empty newest %s", id, found, err, s2.ID())
	}
	if err := s2.SetArchived(true); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := r.MostRecent(ws.ID); id != s1.ID() {
		t.Fatalf("got %s, want %s (the archived one is skipped)", id, s1.ID())
	}
	s1.Close()
	s2.Close()
	// A malformed header is an error, not skipped.
	bad := filepath.Join(r.Dir(), "sessions", ws.ID, "0190a0a0-0000-7000-8000-000000000000")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, headerFile), []byte(`{"format":"loop-session","version":1,"id":"x"}`), 0o600)
	if _, _, err := r.MostRecent(ws.ID); !errors.Is(err, ErrMalformed) {
		t.Fatalf("malformed header: %v", err)
	}
}
