package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/loopdev/loop/engine"
)

// A config.json or preferences.json that is a FIFO (or any file that is
// not regular) is refused before it is read: the engine starts, and the
// config error names the file, instead of the start blocking on a read
// that no writer will ever end.
func TestAConfigThatIsAFIFOIsRefusedNotWaitedOn(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"config.json", "preferences.json"} {
		if err := syscall.Mkfifo(filepath.Join(root, name), 0o600); err != nil {
			testenv.Missing(t, "mkfifo: %v", err)
		}
	}
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context(), engine.Drain)
	cfgErr := e.ConfigError()
	if cfgErr == nil || !strings.Contains(cfgErr.Error(), filepath.Join(root, "config.json")) || !strings.Contains(cfgErr.Error(), "not a regular file") {
		t.Fatalf("config error %v, want one naming %s as not a regular file", cfgErr, filepath.Join(root, "config.json"))
	}
	err = e.ReloadConfig(t.Context())
	if engine.CodeOf(err) != engine.CodeConfigError || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("config/reload: %v (code %q), want config_error naming config.json", err, engine.CodeOf(err))
	}

	// LoadConfig itself, as loop replay and other callers use it.
	if _, err := engine.LoadConfig(filepath.Join(root, "config.json")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadConfig of a FIFO: %v", err)
	}
	// A directory is not a config either.
	dir := filepath.Join(t.TempDir(), "config.json")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.LoadConfig(dir); err == nil {
		t.Fatal("LoadConfig of a directory: no error")
	}
}
