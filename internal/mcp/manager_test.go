package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
)

func TestStdioListAndCall(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)

	st := statusOf(t, m, "test")
	if st.State != StateReady || st.Transport != TransportStdio || st.Error != "" || st.Restarts != 0 {
		t.Fatalf("status = %+v", st)
	}
	tools := m.Tools()
	if st.Tools != len(tools) {
		t.Errorf("status counts %d tools, Tools() has %d", st.Tools, len(tools))
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if tool.Server != "test" || tool.Name != "mcp__test__"+tool.ToolName || !IsMCPTool(tool.Name) {
			t.Errorf("tool %+v: bad namespacing", tool)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tools not in stable order: %v", names)
	}
	for _, want := range []string{"mcp__test__echo", "mcp__test__write_file", "mcp__test__crash"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	echo := tools[slices.Index(names, "mcp__test__echo")]
	if echo.Description != "Echo the text back." || !strings.Contains(string(echo.Schema), `"text"`) {
		t.Errorf("echo tool = %+v, schema %s", echo, echo.Schema)
	}

	res := mustCall(t, m, "mcp__test__echo", `{"text":"hi there"}`)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != convo.BlockText || res.Content[0].Text != "echo: hi there" {
		t.Fatalf("echo result = %+v", res)
	}
}

func TestWriteToolWritesInConfiguredCwd(t *testing.T) {
	workspace := t.TempDir()
	if err := os.Mkdir(filepath.Join(workspace, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPTEST_SECRET", "s3cret")
	m := newTestManager(t, map[string]ServerConfig{
		"files": {Command: serverBinary(t), Cwd: "sub", Env: map[string]string{"MCPTEST_VALUE": "v=${MCPTEST_SECRET}"}},
	}, workspace)
	startReady(t, m)

	res := mustCall(t, m, "mcp__files__write_file", `{"path":"out.txt","content":"hello"}`)
	if res.IsError {
		t.Fatalf("write_file: %+v", res)
	}
	data, err := os.ReadFile(filepath.Join(workspace, "sub", "out.txt"))
	if err != nil || string(data) != "hello" {
		t.Fatalf("file in configured cwd: %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(workspace, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file also written in the workspace root: %v", err)
	}

	var info struct {
		Cwd   string `json:"cwd"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, m, "mcp__files__info", `{}`).Text()), &info); err != nil {
		t.Fatal(err)
	}
	wantCwd, _ := filepath.EvalSymlinks(filepath.Join(workspace, "sub"))
	gotCwd, _ := filepath.EvalSymlinks(info.Cwd)
	if gotCwd != wantCwd {
		t.Errorf("server cwd = %s, want %s", info.Cwd, wantCwd)
	}
	if info.Value != "v=s3cret" {
		t.Errorf("env MCPTEST_VALUE = %q, want the expanded v=s3cret", info.Value)
	}
}

func TestToolErrorVersusCallError(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)

	// The tool ran and failed: a result for the model, not a Go error.
	res, err := m.Call(context.Background(), "mcp__test__fail", json.RawMessage(`{"message":"disk full"}`))
	if err != nil {
		t.Fatalf("tool failure returned a Go error: %v", err)
	}
	if !res.IsError {
		t.Errorf("IsError = false for a failing tool: %+v", res)
	}
	wantContains(t, "fail text", res.Text(), "disk full")

	for _, tc := range []struct {
		name, args string
		is         error
		text       string
	}{
		{"mcp__test__nope", `{}`, ErrUnknownTool, "no such tool"},
		{"mcp__other__echo", `{}`, ErrUnknownTool, `no server "other"`},
		{"echo", `{}`, ErrUnknownTool, "echo"},
		{"mcp__test__echo", `[1,2]`, nil, "JSON object"},
		{"mcp__test__echo", `{"text":`, nil, "not valid JSON"},
	} {
		_, err := m.Call(context.Background(), tc.name, []byte(tc.args))
		if err == nil {
			t.Errorf("Call(%s, %s) succeeded", tc.name, tc.args)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("Call(%s) = %v, want %v", tc.name, err, tc.is)
		}
		wantContains(t, "error", err.Error(), tc.text)
	}

	// Empty and null arguments mean {}.
	for _, args := range []string{"", "null"} {
		if res := mustCall(t, m, "mcp__test__info", args); res.IsError || !strings.Contains(res.Text(), `"pid"`) {
			t.Errorf("echo with %q = %+v", args, res)
		}
	}
}

func TestCrashedServerRestarts(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"crashy": {Command: serverBinary(t)}}, t.TempDir())
	var (
		mu   sync.Mutex
		seen []ServerStatus
	)
	m.OnChange(func() {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, statusOfList(m.Status(), "crashy"))
	})
	startReady(t, m)
	pid1 := serverPid(t, m, "crashy")

	// The server dies during the call: the call fails, the server comes back.
	_, err := m.Call(context.Background(), "mcp__crashy__crash", nil)
	if err == nil {
		t.Fatal("a call whose server died returned no error")
	}
	t.Logf("call error: %v", err)
	st := waitStatus(t, m, "crashy", func(st ServerStatus) bool { return st.State == StateReady && st.Restarts == 1 })
	wantContains(t, "lastError", st.LastError, "exit status 3", "crashing on purpose")
	if st.Error != "" {
		t.Errorf("ready server shows Error %q", st.Error)
	}
	if res := mustCall(t, m, "mcp__crashy__echo", `{"text":"again"}`); res.Text() != "echo: again" {
		t.Errorf("echo after restart = %+v", res)
	}
	if pid2 := serverPid(t, m, "crashy"); pid2 == pid1 {
		t.Errorf("same pid %d after a restart", pid1)
	}

	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(seen, func(st ServerStatus) bool { return st.State == StateRestarting })
	if i < 0 {
		t.Fatalf("OnChange never showed restarting: %+v", seen)
	}
	wantContains(t, "restarting error", seen[i].Error, "exit status 3")
}

func statusOfList(sts []ServerStatus, name string) ServerStatus {
	for _, st := range sts {
		if st.Name == name {
			return st
		}
	}
	return ServerStatus{}
}

func serverPid(t *testing.T, m *Manager, server string) int {
	t.Helper()
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, m, "mcp__"+server+"__info", `{}`).Text()), &info); err != nil || info.Pid == 0 {
		t.Fatalf("info: %v", err)
	}
	return info.Pid
}

func TestServerFailingAtStartEndsFailed(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"broken": {Command: serverBinary(t), Env: map[string]string{"MCPTEST_EXIT_AT_START": "4"}},
	}, t.TempDir())
	startReady(t, m) // returns once the server has given up

	st := statusOf(t, m, "broken")
	if st.State != StateFailed || st.Restarts != m.opts.maxFailures-1 {
		t.Fatalf("status = %+v, want failed after %d restarts", st, m.opts.maxFailures-1)
	}
	wantContains(t, "error", st.Error, "exit status 4", "refusing to start on purpose")
	if len(m.Tools()) != 0 {
		t.Errorf("failed server offers tools: %+v", m.Tools())
	}
	_, err := m.Call(context.Background(), "mcp__broken__echo", nil)
	if !errors.Is(err, ErrServerUnavailable) {
		t.Errorf("call to a failed server = %v", err)
	}
	wantContains(t, "call error", err.Error(), "failed", "exit status 4")
}

func TestMissingCommandFails(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"ghost":  {Command: "loop-test-no-such-mcp-server"},
		"nowd":   {Command: serverBinary(t), Cwd: "does/not/exist"},
		"absent": {Command: "./not-here"},
	}, t.TempDir())
	startReady(t, m)
	for name, want := range map[string]string{
		"ghost":  `"loop-test-no-such-mcp-server": executable file not found`,
		"nowd":   "working directory",
		"absent": "not-here",
	} {
		st := statusOf(t, m, name)
		if st.State != StateFailed || st.Restarts != 0 {
			t.Errorf("%s: status %+v, want failed without retries", name, st)
		}
		wantContains(t, name+" error", st.Error, want)
		t.Logf("%s: %s", name, st.Error)
	}
}

func TestCloseKillsProcesses(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)
	pid := serverPid(t, m, "test")
	child, err := strconv.Atoi(mustCall(t, m, "mcp__test__spawn", `{}`).Text())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server process %d still running after Close", pid)
	}
	// The child it spawned shares its process group; it is not ours to
	// reap, so wait for the kill to land.
	deadline := time.Now().Add(10 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) {
		t.Errorf("server's child %d still running after Close", child)
	}
	if st := statusOf(t, m, "test"); st.State != StateStopped {
		t.Errorf("status after Close = %+v", st)
	}
	if _, err := m.Call(context.Background(), "mcp__test__echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close = %v", err)
	}
	m.Start() // no effect after Close
	if st := statusOf(t, m, "test"); st.State != StateStopped {
		t.Errorf("Start after Close changed status: %+v", st)
	}
}

func TestCloseKillsStubbornServer(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"stubborn": {Command: serverBinary(t), Env: map[string]string{"MCPTEST_STUBBORN": "1"}},
	}, t.TempDir())
	m.opts.stopGrace = 50 * time.Millisecond
	startReady(t, m)
	pid := serverPid(t, m, "stubborn")
	m.Close()
	if alive(pid) {
		t.Errorf("stubborn server %d survived Close", pid)
	}
}

// alive reports whether pid runs; a zombie (killed, not yet reaped by
// whoever inherited it) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && runtimeHasNoProc()
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func runtimeHasNoProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err != nil
}

func TestCallCancel(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)
	pid := serverPid(t, m, "test")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, started := sleepCall(t, ctx, m)
	waitStarted(t, started, done)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call = %v, want context.Canceled", err)
		}
		t.Logf("call error: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("cancelling ctx did not end the call")
	}
	// The server lives on.
	if got := serverPid(t, m, "test"); got != pid {
		t.Errorf("server restarted (pid %d -> %d) after a cancelled call", pid, got)
	}
	if st := statusOf(t, m, "test"); st.State != StateReady || st.Restarts != 0 {
		t.Errorf("status after a cancelled call = %+v", st)
	}
}

func TestCloseAbortsCallInFlight(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)
	done, started := sleepCall(t, context.Background(), m)
	waitStarted(t, started, done)
	m.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("call survived Close without error")
		}
		t.Logf("call error: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("call still running after Close")
	}
}

// sleepCall starts a call of the test server's sleep tool that lasts until
// it is stopped. The file started appears once the server runs it.
func sleepCall(t *testing.T, ctx context.Context, m *Manager) (done chan error, started string) {
	t.Helper()
	started = filepath.Join(t.TempDir(), "started")
	args, _ := json.Marshal(map[string]any{"ms": 600000, "started": started})
	done = make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "mcp__test__sleep", args)
		done <- err
	}()
	return done, started
}

// waitStarted waits until the server is running the call, failing if the
// call ends first. The bound only guards against a hang.
func waitStarted(t *testing.T, started string, done <-chan error) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(started); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the call ended before the server ran it: %v", err)
		case <-deadline:
			t.Fatal("the server never ran the call")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestToolListChanged(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	changed := make(chan struct{}, 100)
	m.OnChange(func() { changed <- struct{}{} })
	startReady(t, m)

	mustCall(t, m, "mcp__test__add_tool", `{"name":"extra"}`)
	deadline := time.After(20 * time.Second)
	for !slices.ContainsFunc(m.Tools(), func(tool Tool) bool { return tool.Name == "mcp__test__extra" }) {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("tool list never gained extra: %+v", m.Tools())
		}
	}
	if res := mustCall(t, m, "mcp__test__extra", `{}`); res.Text() != "I am extra" {
		t.Errorf("extra = %+v", res)
	}
	if st := statusOf(t, m, "test"); st.Tools != len(m.Tools()) {
		t.Errorf("status tools %d, Tools() %d", st.Tools, len(m.Tools()))
	}
}

func TestImageContent(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	startReady(t, m)
	res := mustCall(t, m, "mcp__test__image", `{}`)
	if len(res.Content) != 2 || res.Content[0].Text != "a pixel" {
		t.Fatalf("image result = %+v", res)
	}
	img := res.Content[1]
	data, err := base64.StdEncoding.DecodeString(img.Data)
	if img.Type != convo.BlockImage || img.MimeType != "image/png" || err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Errorf("image block = %+v (%v)", img, err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"a": {Command: serverBinary(t)},
		"b": {Command: serverBinary(t)},
	}, t.TempDir())
	startReady(t, m)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			server := []string{"a", "b"}[i%2]
			text := strconv.Itoa(i)
			res, err := m.Call(context.Background(), "mcp__"+server+"__echo", json.RawMessage(`{"text":"`+text+`"}`))
			if err == nil && res.Text() != "echo: "+text {
				err = errors.New("wrong answer " + res.Text())
			}
			if err != nil {
				errs <- err
			}
			_ = m.Status()
			_ = m.Tools()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDisabledAndUnstarted(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"off": {Command: serverBinary(t), Disabled: true},
		"bad": {Command: serverBinary(t), URL: "http://127.0.0.1:1/"},
	}, t.TempDir())
	if err := m.WaitReady(context.Background()); err != nil { // nothing started: nothing to wait for
		t.Fatal(err)
	}
	startReady(t, m)
	if st := statusOf(t, m, "off"); st.State != StateStopped || !st.Disabled {
		t.Errorf("disabled server status = %+v", st)
	}
	if st := statusOf(t, m, "bad"); st.State != StateFailed || !strings.Contains(st.Error, "not both") {
		t.Errorf("invalid server status = %+v", st)
	}
	if tools := m.Tools(); len(tools) != 0 {
		t.Errorf("tools = %+v", tools)
	}
}

func TestWaitReadyHonoursContext(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{"test": {Command: serverBinary(t)}}, t.TempDir())
	m.Start()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Either the server was already ready (nil) or the cancelled ctx ends
	// the wait; it must not block.
	if err := m.WaitReady(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestHungServerTimesOutAndCloses(t *testing.T) {
	m := newTestManager(t, map[string]ServerConfig{
		"hung": {Command: serverBinary(t), Env: map[string]string{"MCPTEST_HANG": "1"}},
	}, t.TempDir())
	m.opts.connectTimeout = 100 * time.Millisecond
	m.opts.stopGrace = 50 * time.Millisecond
	startReady(t, m)
	st := statusOf(t, m, "hung")
	if st.State != StateFailed {
		t.Fatalf("status = %+v", st)
	}
	wantContains(t, "error", st.Error, "initialize", "deadline exceeded")

	// Close while a start is in progress ends it.
	m2 := newTestManager(t, map[string]ServerConfig{
		"hung": {Command: serverBinary(t), Env: map[string]string{"MCPTEST_HANG": "1"}},
	}, t.TempDir())
	m2.opts.stopGrace = 50 * time.Millisecond
	m2.Start()
	m2.Close()
	if st := statusOf(t, m2, "hung"); st.State != StateStopped {
		t.Errorf("status after Close during start = %+v", st)
	}
}
