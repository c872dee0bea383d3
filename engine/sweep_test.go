package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/store"
)

// The first stored session of a process sweeps, in the background, what
// writers killed mid-write left in the store (docs/storage.md, "Leftovers
// of a crash"); the engine does not wait for it, and Shutdown does.
func TestFirstStoredSessionSweepsTheStoresLeftovers(t *testing.T) {
	root := t.TempDir()
	tomb := filepath.Join(root, "sessions", "global", ".deleted-"+uuid.NewString()+"-0123456789abcdef")
	if err := os.MkdirAll(tomb, 0o700); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(root, "preferences.json.tmp-42")
	if err := os.WriteFile(temp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * store.LeftoverAge)
	if err := os.Chtimes(temp, past, past); err != nil {
		t.Fatal(err)
	}
	e := traceTestEngine(t, root, fmt.Sprintf(scriptedConfig, ""), Options{})
	if _, err := e.NewSession(""); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tomb, temp} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s stayed: %v", filepath.Base(p), err)
		}
	}
}
