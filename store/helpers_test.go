package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/summary"
)

func TestMain(m *testing.M) {
	// Child processes of the crash and lock tests re-execute this binary.
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	cleanupBenchFixtures()
	os.Exit(code)
}

// testClock is a controllable clock: each call returns a later instant.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)}
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// newTestRoot returns a root in a temp dir with a deterministic clock and a
// fault-injecting file system (disarmed).
func newTestRoot(t testing.TB) (*Root, *faultFS) {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	ffs := &faultFS{FS: fsys.OS{}}
	r.fs = ffs
	r.now = newTestClock().now
	return r, ffs
}

// prompt returns the messages of one round: a user prompt, an assistant
// tool call, its result and a final answer.
func prompt(i int) []convo.Message {
	ts := int64(1795972384000 + i*1000)
	args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("file%d.go", i)})
	return []convo.Message{
		{Role: convo.RoleUser, Timestamp: ts, RequestID: fmt.Sprintf("req-%d", i), Content: []convo.Block{{Type: convo.BlockText, Text: fmt.Sprintf("prompt %d: <please> read & fix", i)}}},
		{Role: convo.RoleAssistant, Timestamp: ts + 1, Provider: "mock", Model: "mock-model", StopReason: convo.StopToolUse,
			Usage:   &convo.Usage{Input: 100, Output: 20, TotalTokens: 120},
			Content: []convo.Block{{Type: convo.BlockThinking, Text: "thinking\nabout it", Signature: "sig"}, {Type: convo.BlockToolCall, ID: fmt.Sprintf("call-%d", i), Name: "read", Arguments: args}}},
		{Role: convo.RoleToolResult, Timestamp: ts + 2, ToolCallID: fmt.Sprintf("call-%d", i), ToolName: "read", Content: []convo.Block{{Type: convo.BlockText, Text: "package main\n\nfunc main() {}\n"}}},
		{Role: convo.RoleAssistant, Timestamp: ts + 3, Provider: "mock", Model: "mock-model", StopReason: convo.StopEnd,
			Usage: &convo.Usage{Input: 150, Output: 30, TotalTokens: 180}, Content: []convo.Block{{Type: convo.BlockText, Text: fmt.Sprintf("answer %d", i)}}},
	}
}

// history returns rounds prompts' messages.
func history(rounds int) []convo.Message {
	var h []convo.Message
	for i := range rounds {
		h = append(h, prompt(i)...)
	}
	return h
}

func mustCommit(t testing.TB, s *Session, msgs []convo.Message, rt []RuntimeRecord, edit func(*Header), timings ...TimingAt) {
	t.Helper()
	if err := s.Commit(msgs, rt, edit, timings...); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func wantMessages(t testing.TB, got, want []convo.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			gj, _ := json.Marshal(got[i])
			wj, _ := json.Marshal(want[i])
			t.Fatalf("message %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

func rtRecord(typ string, n int) RuntimeRecord {
	return RuntimeRecord{Type: typ, Time: int64(1795972384000 + n), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

// reopen opens the session again through a fresh root on the real file
// system. While s holds the lock the copy is read-only, which is what a
// second reader sees.
func reopen(t testing.TB, r *Root, s *Session) *Session {
	t.Helper()
	r2, err := OpenRoot(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	o, err := r2.OpenDir(s.Dir())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// snapshotDir returns every file's content under dir, by relative path.
func snapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// faultFS fails chosen operations. hook sees every operation (op, path);
// returning a non-nil fault injects it.
type faultFS struct {
	fsys.FS
	mu   sync.Mutex
	hook func(op, path string) *fault
	log  []string
}

// fault is one injected failure. partial > 0 makes a write store that many
// bytes before failing (a torn write).
type fault struct {
	err     error
	partial int
}

var errInjected = errors.New("injected fault")

func (f *faultFS) arm(hook func(op, path string) *fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// failOnce arms a fault on the first operation op on a path ending in
// suffix.
func (f *faultFS) failOnce(op, suffix string, flt fault) {
	done := false
	f.arm(func(o, p string) *fault {
		// Any path ("") means any of the session's own files: the summary
		// index is derived, its failures are tested on their own
		// (summaries_test.go).
		if suffix == "" && strings.Contains(p, summary.FileName) {
			return nil
		}
		if !done && o == op && strings.HasSuffix(p, suffix) {
			done = true
			return &flt
		}
		return nil
	})
}

func (f *faultFS) check(op, path string) *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, op+" "+filepath.Base(path))
	if f.hook == nil {
		return nil
	}
	return f.hook(op, path)
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if flt := f.check("open", name); flt != nil {
		return nil, flt.err
	}
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: h, fs: f, path: name}, nil
}

func (f *faultFS) Rename(o, n string) error {
	if flt := f.check("rename", o); flt != nil {
		return flt.err
	}
	return f.FS.Rename(o, n)
}

func (f *faultFS) Mkdir(name string, perm os.FileMode) error {
	if flt := f.check("mkdir", name); flt != nil {
		return flt.err
	}
	return f.FS.Mkdir(name, perm)
}

func (f *faultFS) SyncDir(name string) error {
	if flt := f.check("syncdir", name); flt != nil {
		return flt.err
	}
	return f.FS.SyncDir(name)
}

func (f *faultFS) ReadFile(name string) ([]byte, error) {
	if flt := f.check("read", name); flt != nil {
		return nil, flt.err
	}
	return f.FS.ReadFile(name)
}

func (f *faultFS) ReadHead(name string, head, tail []byte) ([]byte, bool, []byte, error) {
	if flt := f.check("read", name); flt != nil {
		return nil, false, nil, flt.err
	}
	return f.FS.ReadHead(name, head, tail)
}

func (f *faultFS) Lock(dir string) (io.Closer, error) {
	if flt := f.check("lock", dir); flt != nil {
		return nil, flt.err
	}
	return f.FS.Lock(dir)
}

func (f *faultFS) LockShared(dir string) (io.Closer, error) {
	if flt := f.check("lockshared", dir); flt != nil {
		return nil, flt.err
	}
	return f.FS.LockShared(dir)
}

func (f *faultFS) RemoveAll(name string) error {
	if flt := f.check("remove", name); flt != nil {
		return flt.err
	}
	return f.FS.RemoveAll(name)
}

type faultFile struct {
	fsys.File
	fs   *faultFS
	path string
}

func (f *faultFile) write(p []byte, off int64, at bool) (int, error) {
	if flt := f.fs.check("write", f.path); flt != nil {
		n := min(flt.partial, len(p))
		if n > 0 {
			if at {
				f.File.WriteAt(p[:n], off)
			} else {
				f.File.Write(p[:n])
			}
		}
		return n, flt.err
	}
	if at {
		return f.File.WriteAt(p, off)
	}
	return f.File.Write(p)
}

func (f *faultFile) Write(p []byte) (int, error)              { return f.write(p, 0, false) }
func (f *faultFile) WriteAt(p []byte, off int64) (int, error) { return f.write(p, off, true) }

func (f *faultFile) Sync() error {
	if flt := f.fs.check("sync", f.path); flt != nil {
		return flt.err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if flt := f.fs.check("truncate", f.path); flt != nil {
		return flt.err
	}
	return f.File.Truncate(size)
}

func openRoot(t *testing.T, dir string) *Root {
	t.Helper()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
