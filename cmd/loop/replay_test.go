package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/trace"
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
			testenv.Missing(t, "%s: %v", what, err)
		}
		code, stdout, stderr := replayOf(t, dir)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "trace-000002.jsonl: not a regular file") {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want status 2 and one line naming the segment", what, code, stdout, stderr)
		}
	}
	fifo := filepath.Join(t.TempDir(), "report")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "mkfifo: %v", err)
	}
	if code, _, stderr := replayOf(t, fifo); code != exitUsage || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a FIFO as the trace directory: status %d, stderr %q", code, stderr)
	}
}

// fullDisk is a trace.FS whose files take no more bytes once full is set.
type fullDisk struct{ full atomic.Bool }

func (d *fullDisk) Mkdir(p string, m os.FileMode) error     { return os.Mkdir(p, m) }
func (d *fullDisk) MkdirAll(p string, m os.FileMode) error  { return os.MkdirAll(p, m) }
func (d *fullDisk) ReadDir(p string) ([]os.DirEntry, error) { return os.ReadDir(p) }
func (d *fullDisk) Remove(p string) error                   { return os.Remove(p) }
func (d *fullDisk) OpenFile(p string, flag int, m os.FileMode) (io.WriteCloser, error) {
	if d.full.Load() {
		return nil, syscall.ENOSPC
	}
	f, err := os.OpenFile(p, flag, m)
	return diskFile{f, d}, err
}

type diskFile struct {
	*os.File
	d *fullDisk
}

func (f diskFile) Write(p []byte) (int, error) {
	if f.d.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// A disk that fills during a run and stays full until the process exits
// takes the run's last records and the incomplete record the writer would
// have written once a write succeeded: loop replay refuses the trace as
// incomplete, status 2 and one line, instead of reporting a divergence.
func TestReplayRefusesATraceWhoseDiskStayedFullUntilExit(t *testing.T) {
	disk := &fullDisk{}
	w := trace.NewWriter(trace.Options{Dir: filepath.Join(t.TempDir(), "s1"), FS: disk, SessionID: "s1", Cwd: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	w.Add(&trace.Record{Type: trace.TypePrompt, RunID: "run1", RequestID: "r1", Input: &trace.Input{Text: "hi"}, Provider: "oa", Model: "m1"})
	turn := func(n int) {
		c := w.StartCall(trace.Record{Purpose: trace.PurposeMain, Provider: "oa", API: "openai", Model: "m1", RunID: "run1", RequestID: "r1"})
		c.Request(1, "http://127.0.0.1:9/v1/chat/completions", http.Header{}, provider.BodyOf([]byte(fmt.Sprintf(`{"model":"m1","turn":%d}`, n))))
		c.Response(1, 200)
		c.Body(1, []byte("data: [DONE]\n\n"))
		c.End(1, nil)
		c.Finish(trace.Record{StopReason: "toolUse"})
	}
	turn(1)
	w.Flush()
	disk.full.Store(true)
	turn(2)
	w.Add(&trace.Record{Type: trace.TypeEnd, Step: trace.TypePrompt, RunID: "run1", Outcome: "completed"})
	w.Close()
	code, stdout, stderr := replayOf(t, w.Dir())
	if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "the trace is incomplete: prompt r1 (run run1) has no end record") {
		t.Errorf("status %d, stdout %q, stderr %q; want status 2 and one line saying the trace is incomplete", code, stdout, stderr)
	}
}

// A crafted config record is refused with a line, whatever it holds.
func TestReplayConfigRefusesAConfigRecordThatIsNotAnObject(t *testing.T) {
	for _, rec := range []string{`null`, `[]`, `7`, `"x"`} {
		if _, err := replayConfig(json.RawMessage(rec), filepath.Join(t.TempDir(), "config.json"), nil); err == nil {
			t.Errorf("config record %s taken", rec)
		}
	}
	for _, rec := range []string{`{}`, `{"providers":5}`, `{"providers":{"oa":null}}`, `{"providers":{"oa":{"models":"x"}}}`} {
		if _, err := replayConfig(json.RawMessage(rec), filepath.Join(t.TempDir(), "config.json"), nil); err != nil {
			t.Errorf("config record %s: %v", rec, err)
		}
	}
}

// Each HTTP API's provider reaches the trace at the base URL its calls
// were recorded with: the recorded URL without the API's own path.
func TestReplayConfigGivesEachAPIItsRecordedBaseURL(t *testing.T) {
	var calls []*trace.RecordedCall
	for _, c := range []struct{ provider, api, url string }{
		{"oa", "openai", "http://127.0.0.1:9/v1/chat/completions"},
		{"or", "openai-responses", "http://127.0.0.1:9/v1/responses"},
		{"an", "anthropic", "http://127.0.0.1:9/v1/messages"},
	} {
		calls = append(calls, &trace.RecordedCall{
			Call:     trace.Record{Provider: c.provider, API: c.api, Model: "m"},
			Attempts: []*trace.RecordedAttempt{{Request: trace.Record{URL: c.url}}},
		})
	}
	data, err := replayConfig(json.RawMessage(`{}`), filepath.Join(t.TempDir(), "config.json"), calls)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Providers map[string]struct {
			API     string `json:"api"`
			BaseURL string `json:"baseUrl"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"oa": "http://127.0.0.1:9/v1", "or": "http://127.0.0.1:9/v1", "an": "http://127.0.0.1:9/v1"} {
		if got := cfg.Providers[name].BaseURL; got != want {
			t.Errorf("provider %s (%s): baseUrl %q, want %q", name, cfg.Providers[name].API, got, want)
		}
	}
}
