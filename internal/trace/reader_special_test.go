package trace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/internal/testenv"
)

// specialSegments makes trace directories whose segment is not a regular
// file: a FIFO no one writes (a read would wait forever) and a link to
// /dev/zero (a read would fill memory), each beside a good segment.
func specialSegments(t *testing.T) map[string]string {
	t.Helper()
	good, err := os.ReadFile(filepath.Join(recordCalls(t, `{"m":1}`).Dir, SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := os.MkdirAll(fifo, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fifo, SegmentName(1)), good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifo, SegmentName(2)), 0o600); err != nil {
		testenv.Missing(t, "mkfifo: %v", err)
	}
	dirs["a FIFO"] = fifo
	if _, err := os.Stat("/dev/zero"); err == nil {
		zero := filepath.Join(t.TempDir(), "zero")
		if err := os.MkdirAll(zero, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(zero, SegmentName(1)), good, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(zero, SegmentName(2))); err != nil {
			t.Fatal(err)
		}
		dirs["a link to /dev/zero"] = zero
	}
	return dirs
}

// A segment that is not a regular file is refused before it is read, as
// an import's source is (internal/regfile); so is a trace directory that
// is a FIFO.
func TestReadRefusesASegmentThatIsNotARegularFile(t *testing.T) {
	for what, dir := range specialSegments(t) {
		_, err := Read(dir)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), SegmentName(2)) {
			t.Errorf("%s: %v, want the segment refused as not a regular file", what, err)
		}
	}
	fifo := filepath.Join(t.TempDir(), "trace-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "mkfifo: %v", err)
	}
	if IsDir(fifo) {
		t.Error("a FIFO is taken for a trace directory")
	}
	if _, err := Read(fifo); err == nil {
		t.Error("a FIFO is read as a trace directory")
	}
}
