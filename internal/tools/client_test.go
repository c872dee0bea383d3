package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFS is an editor: open buffers shadow the disk, writes land in the
// buffers (the disk is untouched), and every call is recorded.
type fakeFS struct {
	mu       sync.Mutex
	buffers  map[string]string
	readErr  error // every read fails with it
	writeErr error // every write fails with it
	reads    []string
	writes   []string
}

func newFakeFS() *fakeFS { return &fakeFS{buffers: map[string]string{}} }

func (f *fakeFS) ReadTextFile(_ context.Context, path string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, path)
	if f.readErr != nil {
		return "", f.readErr
	}
	if b, ok := f.buffers[path]; ok {
		return b, nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func (f *fakeFS) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, path)
	if f.writeErr != nil {
		return f.writeErr
	}
	f.buffers[path] = content
	return nil
}

func (f *fakeFS) calls() (reads, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reads), len(f.writes)
}

func TestClientFSReadServesBuffer(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	path := filepath.Join(f.ws, "file.txt")
	cfs.buffers[path] = "alpha\nUNSAVED\ngamma\ndelta\n"
	env := f.env(PresetReadOnly)
	env.FS = cfs

	r := run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": 2, "limit": 2})
	got := wantOK(t, r)
	if !strings.Contains(got, "2\tUNSAVED\n3\tgamma\n") || strings.Contains(got, "beta") ||
		!strings.Contains(got, "Showing lines 2-3 of 4") {
		t.Fatalf("read: %q", got)
	}
	if r.Details["source"] != "editor" || r.Details["totalLines"] != 4 {
		t.Fatalf("details %v", r.Details)
	}
	if mustRead(t, path) != "alpha\nbeta\ngamma\n" {
		t.Fatal("the disk changed")
	}

	// A buffer whose file is gone from the disk is still read.
	gone := filepath.Join(f.ws, "deleted.txt")
	cfs.buffers[gone] = "still open\n"
	if got := wantOK(t, run(t, env, NameRead, map[string]any{"path": "deleted.txt"})); !strings.Contains(got, "still open") {
		t.Fatalf("deleted file: %q", got)
	}
}

// When the editor cannot serve a file the disk has, the saved copy is read
// with a note; when neither has it, the read fails.
func TestClientFSReadFallsBackToDisk(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	cfs.readErr = errors.New("outside the project")
	env := f.env(PresetReadOnly)
	env.FS = cfs

	r := run(t, env, NameRead, map[string]any{"path": "file.txt"})
	got := wantOK(t, r)
	if !strings.Contains(got, "2\tbeta\n") || !strings.Contains(got, "outside the project") || !strings.Contains(got, "saved on disk") {
		t.Fatalf("fallback: %q", got)
	}
	if r.Details["source"] != "disk" {
		t.Fatalf("details %v", r.Details)
	}
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "nothere.txt"}), "no such file on disk", "outside the project")

	// A client that does not serve reads is not mentioned.
	cfs.readErr = ErrNotServed
	if got := wantOK(t, run(t, env, NameRead, map[string]any{"path": "file.txt"})); strings.Contains(got, "editor") {
		t.Fatalf("not served: %q", got)
	}
}

// Images and binary files come from the disk; the client is not asked.
func TestClientFSReadImagesAndBinaryFromDisk(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	env := f.env(PresetReadOnly)
	env.FS = cfs
	mustWrite(t, filepath.Join(f.ws, "pic.png"), "\x89PNG\r\n\x1a\nrest")
	mustWrite(t, filepath.Join(f.ws, "blob.bin"), "a\x00b")

	r := run(t, env, NameRead, map[string]any{"path": "pic.png"})
	if wantOK(t, r); len(r.Content) != 2 || r.Content[1].MimeType != "image/png" {
		t.Fatalf("image: %#v", r.Content)
	}
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "blob.bin"}), "binary file")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "sub"}), "directory")
	if reads, _ := cfs.calls(); reads != 0 {
		t.Fatalf("the client was asked %d times", reads)
	}
}

// The permission checks run before the client is asked.
func TestClientFSPermissionsFirst(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	env := f.env(PresetWorkspaceWrite)
	env.FS = cfs
	secret := filepath.Join(f.outside, "secret.txt")

	wantErr(t, run(t, env, NameRead, map[string]any{"path": secret}), "permission denied")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "link_out/secret.txt"}), "permission denied")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": secret, "content": "x"}), "permission denied")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": secret, "oldText": "secret", "newText": "x"}), "permission denied")
	if reads, writes := cfs.calls(); reads != 0 || writes != 0 {
		t.Fatalf("the client saw %d reads and %d writes", reads, writes)
	}
	if d, _ := Decide(PresetWorkspaceWrite, true, NameWrite, js(t, map[string]any{"path": secret, "content": "x"}), f.ws); d != Deny {
		t.Fatalf("Decide: %v", d)
	}
}

func TestClientFSWrite(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	env := f.env(PresetWorkspaceWrite)
	env.FS = cfs
	path := filepath.Join(f.ws, "file.txt")
	cfs.buffers[path] = "alpha\nUNSAVED\n"

	r := run(t, env, NameWrite, map[string]any{"path": "file.txt", "content": "new\n"})
	if got := wantOK(t, r); got != "Overwrote file.txt (4 bytes)." {
		t.Fatalf("write: %q", got)
	}
	if cfs.buffers[path] != "new\n" || mustRead(t, path) != "alpha\nbeta\ngamma\n" {
		t.Fatalf("buffer %q, disk %q", cfs.buffers[path], mustRead(t, path))
	}
	// The diff replaces the buffer, not the saved copy.
	if r.Details["oldText"] != "alpha\nUNSAVED\n" || !strings.Contains(r.Details["diff"].(string), "-UNSAVED") {
		t.Fatalf("details %v", r.Details)
	}

	// A new file in a new directory: the directory is made on disk, the
	// content goes to the editor, which is not asked for the old content.
	reads, _ := cfs.calls()
	newPath := filepath.Join(f.ws, "deep", "er", "n.txt")
	r = run(t, env, NameWrite, map[string]any{"path": "deep/er/n.txt", "content": "n"})
	if got := wantOK(t, r); !strings.HasPrefix(got, "Created") || r.Details["created"] != true {
		t.Fatalf("create: %q %v", got, r.Details)
	}
	if fi, err := os.Stat(filepath.Dir(newPath)); err != nil || !fi.IsDir() {
		t.Fatalf("parent: %v", err)
	}
	if _, err := os.Stat(newPath); !os.IsNotExist(err) || cfs.buffers[newPath] != "n" {
		t.Fatalf("new file on disk (%v) or not in the buffer (%q)", err, cfs.buffers[newPath])
	}
	if r2, _ := cfs.calls(); r2 != reads {
		t.Fatal("the client was asked for a new file's content")
	}

	// The editor refuses: the call fails and the disk is untouched.
	cfs.writeErr = errors.New("read-only buffer")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "file.txt", "content": "x"}), "editor refused", "read-only buffer")
	if mustRead(t, path) != "alpha\nbeta\ngamma\n" {
		t.Fatal("a refused write reached the disk")
	}

	// An editor that does not serve writes: the disk is written.
	cfs.writeErr = ErrNotServed
	wantOK(t, run(t, env, NameWrite, map[string]any{"path": "file.txt", "content": "disk\n"}))
	if mustRead(t, path) != "disk\n" {
		t.Fatal("not written to disk")
	}
}

func TestClientFSEdit(t *testing.T) {
	f := newFixture(t)
	cfs := newFakeFS()
	env := f.env(PresetWorkspaceWrite)
	env.FS = cfs
	path := filepath.Join(f.ws, "file.txt")
	cfs.buffers[path] = "alpha\nUNSAVED\ngamma\n"

	r := run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "UNSAVED", "newText": "edited"})
	if got := wantOK(t, r); got != "Applied 1 edit to file.txt (line 2)." {
		t.Fatalf("edit: %q", got)
	}
	if cfs.buffers[path] != "alpha\nedited\ngamma\n" || mustRead(t, path) != "alpha\nbeta\ngamma\n" {
		t.Fatalf("buffer %q, disk %q", cfs.buffers[path], mustRead(t, path))
	}
	// Text only on disk is not in the editor's version.
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "beta", "newText": "x"}), "not found")

	// The editor cannot read it: no fallback to the disk, nothing written.
	_, writes := cfs.calls()
	cfs.readErr = errors.New("buffer is locked")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "beta", "newText": "x"}), "buffer is locked", "no edit was applied")
	if _, w := cfs.calls(); w != writes || mustRead(t, path) != "alpha\nbeta\ngamma\n" {
		t.Fatal("an edit was written")
	}

	// Binary files are refused from the disk's bytes.
	cfs.readErr = nil
	mustWrite(t, filepath.Join(f.ws, "blob.bin"), "a\x00b")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "blob.bin", "oldText": "a", "newText": "b"}), "binary file")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "missing.txt", "oldText": "a", "newText": "b"}), "use write to create")
}

// fakeTerminal runs nothing: fn decides what the "editor" answers.
type fakeTerminal struct {
	mu   sync.Mutex
	reqs []TerminalRequest
	fn   func(ctx context.Context, req TerminalRequest) (TerminalResult, error)
}

func (f *fakeTerminal) Run(ctx context.Context, req TerminalRequest, _ func(string)) (TerminalResult, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.fn(ctx, req)
}

func exitCode(n int) *int { return &n }

func TestClientTerminalBash(t *testing.T) {
	f := newFixture(t)
	term := &fakeTerminal{fn: func(_ context.Context, req TerminalRequest) (TerminalResult, error) {
		if req.Command == "false" {
			return TerminalResult{Output: "", ExitCode: exitCode(1)}, nil
		}
		return TerminalResult{Output: "hi from the editor\n", ExitCode: exitCode(0)}, nil
	}}
	env := f.env(PresetWorkspaceWrite)
	env.Terminal = term
	env.BashEnv = []string{"LOOP_X=1"}

	r := run(t, env, NameBash, map[string]any{"command": "echo hi"})
	if got := wantOK(t, r); got != "hi from the editor\n\n[exit code 0]" {
		t.Fatalf("bash: %q", got)
	}
	if r.Details["exitCode"] != 0 || r.Details["terminal"] != true || r.Details["truncated"] != false {
		t.Fatalf("details %v", r.Details)
	}
	req := term.reqs[0]
	if req.Command != "echo hi" || req.Cwd != f.ws || req.OutputByteLimit != DefaultBashOutputCap ||
		strings.Join(req.Env, " ") != "PAGER=cat GIT_PAGER=cat LOOP_X=1" {
		t.Fatalf("request %+v", req)
	}
	r = run(t, env, NameBash, map[string]any{"command": "false"})
	if got := wantErr(t, r); got != "(no output)\n\n[exit code 1]" {
		t.Fatalf("false: %q", got)
	}

	// A terminal that fails to start is an error result.
	term.fn = func(context.Context, TerminalRequest) (TerminalResult, error) {
		return TerminalResult{}, errors.New("no shell")
	}
	wantErr(t, run(t, env, NameBash, map[string]any{"command": "ls"}), "editor's terminal failed", "no shell")

	// Read-only without a sandbox: denied before the terminal is asked.
	n := len(term.reqs)
	if d, _ := Decide(PresetReadOnly, false, NameBash, js(t, map[string]any{"command": "ls"}), f.ws); d != Deny || len(term.reqs) != n {
		t.Fatalf("read-only bash: %v", d)
	}
}

// The client keeps the end of long output; the result says the start was
// dropped, and a client that kept more than asked is cut here.
func TestClientTerminalTruncated(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.BashOutputCap = 1 << 10
	env.Terminal = &fakeTerminal{fn: func(_ context.Context, req TerminalRequest) (TerminalResult, error) {
		return TerminalResult{Output: strings.Repeat("x", req.OutputByteLimit-10) + "THE END", ExitCode: exitCode(0), Truncated: true}, nil
	}}
	r := run(t, env, NameBash, map[string]any{"command": "yes"})
	got := wantOK(t, r)
	if !strings.HasPrefix(got, "[the start of the output was dropped") || !strings.Contains(got, "THE END") || r.Details["truncated"] != true {
		t.Fatalf("truncated: %q %v", got, r.Details)
	}

	env.Terminal = &fakeTerminal{fn: func(context.Context, TerminalRequest) (TerminalResult, error) {
		return TerminalResult{Output: "HEAD" + strings.Repeat("y", 5000) + "TAIL", ExitCode: exitCode(0)}, nil
	}}
	r = run(t, env, NameBash, map[string]any{"command": "yes"})
	got = wantOK(t, r)
	if !strings.HasPrefix(got, "HEAD") || !strings.Contains(got, "TAIL") || !strings.Contains(got, "omitted") || r.Details["truncated"] != true {
		t.Fatalf("capped: %q %v", got, r.Details)
	}
}

// Timeout and abort cancel the terminal's context; the client kills the
// command and its output so far is kept.
func TestClientTerminalTimeoutAndAbort(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.BashTimeout = 50 * time.Millisecond
	started := make(chan struct{}, 1)
	env.Terminal = &fakeTerminal{fn: func(ctx context.Context, _ TerminalRequest) (TerminalResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return TerminalResult{Output: "partial\n", Signal: "SIGKILL"}, ctx.Err()
	}}
	r := run(t, env, NameBash, map[string]any{"command": "sleep 100"})
	if got := wantErr(t, r); got != "partial\n\n[command timed out after 0.05 s and was killed in the editor's terminal]" {
		t.Fatalf("timeout: %q", got)
	}
	if r.Details["timedOut"] != true || r.Details["signal"] != "SIGKILL" || r.Details["exitCode"] != -1 {
		t.Fatalf("details %v", r.Details)
	}
	<-started

	env.BashTimeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	tool, _ := Lookup(NameBash)
	go func() { done <- tool.Run(ctx, env, js(t, map[string]any{"command": "sleep 100"}), nil) }()
	<-started
	cancel()
	r = <-done
	if got := wantErr(t, r, "command aborted", "partial"); r.Details["aborted"] != true {
		t.Fatalf("abort: %q %v", got, r.Details)
	}
}

// A front end that no longer serves terminals runs nothing: the command
// runs locally.
func TestClientTerminalNotServed(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	env.Terminal = &fakeTerminal{fn: func(context.Context, TerminalRequest) (TerminalResult, error) {
		return TerminalResult{}, ErrNotServed
	}}
	r := run(t, env, NameBash, map[string]any{"command": "echo local-$((1+1))"})
	if got := wantOK(t, r); got != "local-2\n\n[exit code 0]" || r.Details["terminal"] != nil {
		t.Fatalf("local: %q %v", got, r.Details)
	}
}
