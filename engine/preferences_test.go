package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/engine"
)

// preferences.json is a file of the data root (docs/configuration.md):
// its member names are a format, whatever the engine's Go types are
// called, and a new engine reads what an older one wrote.
func TestPreferencesFileKeepsItsMemberNames(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	s := h.newSession()
	if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, ptr("high")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(h.root, "preferences.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"model\": {\n    \"provider\": \"fake\",\n    \"id\": \"m1\"\n  },\n  \"effort\": \"high\"\n}"
	if string(got) != want {
		t.Fatalf("preferences.json:\n%s\nwant\n%s", got, want)
	}

	// A file written by hand, or by an older release, is read by those names.
	if err := os.WriteFile(filepath.Join(h.root, "preferences.json"), []byte(`{"model":{"provider":"fake","id":"m2"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.e.Shutdown(t.Context(), engine.Drain)
	h.start()
	s2, err := h.e.NewSession(h.ws)
	if err != nil {
		t.Fatal(err)
	}
	if m := s2.Snapshot().Model; m == nil || *m != (engine.ModelRef{Provider: "fake", ID: "m2"}) || s2.Snapshot().Effort != engine.EffortDefault {
		t.Fatalf("a new session after the remembered choice fake/m2: model %+v effort %q", m, s2.Snapshot().Effort)
	}
}
