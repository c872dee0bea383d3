package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// goodSegment is a whole version 2 trace of one prompt and one call.
const goodSegment = `{"type":"trace","t":1,"version":2,"sessionId":"s1","cwd":"/nowhere","segment":1}
{"type":"prompt","t":2,"runId":"r","requestId":"q","input":{"text":"hi"},"provider":"oa","model":"m1"}
{"type":"call","t":3,"runId":"r","requestId":"q","call":1,"purpose":"main","provider":"oa","api":"openai","model":"m1"}
`

// replayOf runs loop replay in this process and returns its exit status,
// stdout and stderr.
func replayOf(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("LOOP_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"replay"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// loop replay refuses a trace whose segment is a FIFO or a link to a
// device, as loop import refuses such a source: at once, with one line and
// status 2, instead of waiting for a writer or reading until memory runs
// out. So it does a FIFO given as the trace directory.
func TestReplayRefusesASegmentThatIsAFIFOOrADevice(t *testing.T) {
	specials := map[string]func(string) error{
		"a FIFO": func(p string) error { return syscall.Mkfifo(p, 0o600) },
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		specials["a link to /dev/zero"] = func(p string) error { return os.Symlink("/dev/zero", p) }
	}
	for what, make := range specials {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "trace-000001.jsonl"), []byte(goodSegment), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := make(filepath.Join(dir, "trace-000002.jsonl")); err != nil {
			t.Skipf("%s: %v", what, err)
		}
		code, stdout, stderr := replayOf(t, dir)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "trace-000002.jsonl: not a regular file") {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want status 2 and one line naming the segment", what, code, stdout, stderr)
		}
	}
	fifo := filepath.Join(t.TempDir(), "report")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if code, _, stderr := replayOf(t, fifo); code != exitUsage || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a FIFO as the trace directory: status %d, stderr %q", code, stderr)
	}
}
