package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test server is built once per test binary.
var testServer struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testServer.dir != "" {
		os.RemoveAll(testServer.dir)
	}
	os.Exit(code)
}

// serverBinary builds testdata/mcpserver with the go command running the
// tests.
func serverBinary(t *testing.T) string {
	t.Helper()
	testServer.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpserver-*")
		if err != nil {
			testServer.err = err
			return
		}
		testServer.dir = dir
		testServer.path = filepath.Join(dir, "mcpserver")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-o", testServer.path, "./testdata/mcpserver")
		if out, err := cmd.CombinedOutput(); err != nil {
			testServer.err = fmt.Errorf("building test server: %v\n%s", err, out)
		}
	})
	if testServer.err != nil {
		t.Fatal(testServer.err)
	}
	return testServer.path
}

// newTestManager returns a Manager with fast retries, closed at cleanup.
func newTestManager(t *testing.T, servers map[string]ServerConfig, cwd string) *Manager {
	t.Helper()
	m := NewManager(servers, cwd, nil)
	m.opts.backoffBase = 10 * time.Millisecond
	m.opts.backoffMax = 80 * time.Millisecond
	m.opts.maxFailures = 3
	m.opts.connectTimeout = 20 * time.Second
	t.Cleanup(func() { m.Close() })
	return m
}

func startReady(t *testing.T, m *Manager) {
	t.Helper()
	m.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v; status %+v", err, m.Status())
	}
}

// waitStatus waits until server's status satisfies ok. The deadline only
// bounds a hung test; nothing asserts how fast the change comes.
func waitStatus(t *testing.T, m *Manager, server string, ok func(ServerStatus) bool) ServerStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, st := range m.Status() {
			if st.Name == server && ok(st) {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s never reached the wanted status; now %+v", server, m.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusOf(t *testing.T, m *Manager, server string) ServerStatus {
	t.Helper()
	for _, st := range m.Status() {
		if st.Name == server {
			return st
		}
	}
	t.Fatalf("no status for %s", server)
	return ServerStatus{}
}

func mustCall(t *testing.T, m *Manager, name, args string) Result {
	t.Helper()
	res, err := m.Call(context.Background(), name, []byte(args))
	if err != nil {
		t.Fatalf("Call %s: %v", name, err)
	}
	return res
}

func wantContains(t *testing.T, what, got string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(got, s) {
			t.Errorf("%s = %q, want it to contain %q", what, got, s)
		}
	}
}
