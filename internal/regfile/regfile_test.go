package regfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Read takes a regular file, also through a link, and refuses a FIFO (an
// open that would wait for a writer), a device and a file over the limit
// before reading them.
func TestReadTakesOnlyARegularFileWithinTheLimit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("twelve bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		if data, err := Read(p, 12); err != nil || string(data) != "twelve bytes" {
			t.Errorf("%s: %q, %v", p, data, err)
		}
	}
	if _, err := Read(file, 11); err == nil || !strings.Contains(err.Error(), "12 bytes, more than the 11 allowed") {
		t.Errorf("a file over the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	specials := []string{fifo}
	if _, err := os.Stat("/dev/zero"); err == nil {
		zero := filepath.Join(dir, "zero")
		if err := os.Symlink("/dev/zero", zero); err != nil {
			t.Fatal(err)
		}
		specials = append(specials, zero)
	}
	for _, p := range specials {
		if _, err := Read(p, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want not a regular file, without the path", p, err)
		}
	}
}
