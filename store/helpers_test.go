package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

func TestMain(m *testing.M) {
	// Child processes of the crash and lock tests re-execute this binary.
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	benchDirs.RemoveAll()
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
func newTestRoot(t testing.TB) (*Root, *storetest.FaultFS) {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	ffs := &storetest.FaultFS{FS: fsys.OS{}}
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

func openRoot(t *testing.T, dir string) *Root {
	t.Helper()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
