package sandbox_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
	"github.com/loopdev/loop/internal/sandbox/sandboxtest"
)

// layout is a fake machine under one temporary directory: a home with
// key stores, a data root and a workspace, a temp directory, and a
// directory outside all of them.
type layout struct {
	home, ws, tmp, data, outside string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := layout{
		home:    filepath.Join(base, "home"),
		ws:      filepath.Join(base, "home", "src", "ws"),
		tmp:     filepath.Join(base, "tmp"),
		data:    filepath.Join(base, "home", ".local", "share", "loop"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{l.ws, l.tmp, l.data, l.outside, filepath.Join(l.home, ".ssh"), filepath.Join(l.home, ".docker")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{
		filepath.Join(l.home, ".ssh", "id_ed25519"):     "PRIVATE KEY",
		filepath.Join(l.home, ".netrc"):                 "machine x password y",
		filepath.Join(l.home, ".docker", "config.json"): `{"auths":{}}`,
		filepath.Join(l.home, ".docker", "daemon.json"): `{}`,
		filepath.Join(l.home, ".bashrc"):                "# rc",
		filepath.Join(l.outside, "file"):                "outside",
		filepath.Join(l.data, "config.json"):            "{}",
		filepath.Join(l.ws, "README"):                   "ws",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l layout) policy(network bool) sandbox.Policy {
	return sandbox.Policy{
		Name:     "workspace-write",
		Writable: []string{l.ws, l.tmp},
		ReadOnly: []string{l.data},
		Deny:     sandbox.DefaultDeny(l.home),
		Network:  network,
	}
}

// run runs script with sh under p and returns its combined output and
// whether it exited 0.
func run(t *testing.T, p sandbox.Policy, dir, script string) (string, bool) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := sandbox.Start(cmd, p); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	err := cmd.Wait()
	return out.String(), err == nil
}

func TestSandboxedCommandWritesOnlyInTheWorkspaceAndTemp(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	for _, path := range []string{filepath.Join(l.ws, "new"), filepath.Join(l.ws, "README"), filepath.Join(l.tmp, "scratch")} {
		if out, ok := run(t, p, l.ws, "echo changed > "+path); !ok {
			t.Errorf("write %s failed: %s", path, out)
		}
	}
	if out, ok := run(t, p, l.ws, "mkdir -p sub/dir && mv README sub/dir/R && rm -r sub"); !ok {
		t.Errorf("moving and removing inside the workspace failed: %s", out)
	}
	for _, path := range []string{
		filepath.Join(l.home, "new"),
		filepath.Join(l.home, ".bashrc"),
		filepath.Join(l.data, "config.json"),
		filepath.Join(l.data, "new"),
		filepath.Join(l.outside, "file"),
		"/etc/loop-sandbox-test",
	} {
		before, _ := os.ReadFile(path)
		if out, ok := run(t, p, l.ws, "echo changed >> "+path); ok {
			t.Errorf("write %s succeeded under the sandbox: %s", path, out)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Errorf("%s changed under the sandbox: %q", path, after)
		}
	}
	os.Remove("/etc/loop-sandbox-test")
	for _, script := range []string{
		"truncate -s 0 " + filepath.Join(l.home, ".bashrc"),
		"rm " + filepath.Join(l.outside, "file"),
		"mv " + filepath.Join(l.outside, "file") + " " + l.ws,
		"mkdir " + filepath.Join(l.home, "d"),
	} {
		if out, ok := run(t, p, l.ws, script); ok {
			t.Errorf("%q succeeded under the sandbox: %s", script, out)
		}
	}
}

func TestSandboxedCommandCannotWriteThroughLinksOutOfTheWorkspace(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	if err := os.Symlink(l.home, filepath.Join(l.ws, "home")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(l.home, ".bashrc"), filepath.Join(l.ws, "rc")); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{
		"echo x > home/new",
		"echo x >> rc",
		"ln " + filepath.Join(l.home, ".bashrc") + " hard && echo x >> hard",
		"ln " + filepath.Join(l.outside, "file") + " hard2 && echo x >> hard2",
	} {
		if out, ok := run(t, p, l.ws, script); ok {
			t.Errorf("%q succeeded under the sandbox: %s", script, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(l.home, ".bashrc")); string(b) != "# rc" {
		t.Errorf(".bashrc changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(l.home, "new")); err == nil {
		t.Error("a file was created in home through a symlink")
	}
}

func TestSandboxedCommandCannotReadKeyStores(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	for _, path := range []string{
		filepath.Join(l.home, ".ssh", "id_ed25519"),
		filepath.Join(l.home, ".netrc"),
		filepath.Join(l.home, ".docker", "config.json"),
	} {
		if out, ok := run(t, p, l.ws, "cat "+path); ok || strings.Contains(out, "PRIVATE") || strings.Contains(out, "password") || strings.Contains(out, "auths") {
			t.Errorf("reading %s succeeded under the sandbox: %s", path, out)
		}
	}
	if out, ok := run(t, p, l.ws, "cp -r "+filepath.Join(l.home, ".ssh")+" stolen"); ok {
		t.Errorf("copying ~/.ssh succeeded: %s", out)
	}
	// What is not denied stays readable, the siblings of a denied file
	// included, and a denied directory's names can be listed.
	for _, script := range []string{
		"cat " + filepath.Join(l.home, ".bashrc"),
		"cat " + filepath.Join(l.home, ".docker", "daemon.json"),
		"cat " + filepath.Join(l.outside, "file"),
		"cat " + filepath.Join(l.data, "config.json"),
		"ls " + l.home,
		"ls " + filepath.Join(l.home, ".ssh"),
		"cat /etc/passwd >/dev/null",
	} {
		if out, ok := run(t, p, l.ws, script); !ok {
			t.Errorf("%q failed under the sandbox: %s", script, out)
		}
	}
}

func TestSandboxedCommandReachesTCPOnlyWithNetwork(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("SKIP: the TCP check uses bash's /dev/tcp")
	}
	l := newLayout(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	})
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`exec /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && head -n1 <&3'`, port)
	if out, ok := run(t, l.policy(false), l.ws, connect); ok || strings.Contains(out, "hello") {
		t.Errorf("TCP connect succeeded without sandbox.network: %s", out)
	}
	if out, ok := run(t, l.policy(true), l.ws, connect); !ok || !strings.Contains(out, "hello") {
		t.Errorf("TCP connect failed with sandbox.network: %s", out)
	}
	ln.Close()
	wg.Wait()
}

func TestSandboxRulesReachEveryChildProcess(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	target := filepath.Join(l.home, "escaped")
	for _, script := range []string{
		`sh -c 'echo x > ` + target + `'`,
		`(echo x > ` + target + `) & wait`,
		`nohup sh -c 'echo x > ` + target + `' > nohup.out 2>&1; wait`,
		`setsid sh -c 'echo x > ` + target + `'`,
		`sh -c 'sh -c "cat ` + filepath.Join(l.home, ".ssh", "id_ed25519") + ` > leaked"'; cat leaked`,
	} {
		out, _ := run(t, p, l.ws, script)
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%q wrote outside: %s", script, out)
			os.Remove(target)
		}
		if strings.Contains(out, "PRIVATE") {
			t.Errorf("%q read a key: %s", script, out)
		}
	}
}

// The sandbox is enforced on a thread that ends, never on Loop itself:
// after sandboxed commands ran, from many goroutines at once, Loop still
// writes where they could not.
func TestSandboxLeavesLoopsOwnAccessAlone(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			if _, ok := run(t, p, l.ws, "echo x > "+filepath.Join(l.home, "x")); ok {
				errs <- fmt.Errorf("sandboxed command %d wrote home", i)
			}
			if err := os.WriteFile(filepath.Join(l.data, fmt.Sprintf("own-%d", i)), []byte("ok"), 0o644); err != nil {
				errs <- fmt.Errorf("Loop's own write %d: %w", i, err)
			}
			if _, err := os.ReadFile(filepath.Join(l.home, ".ssh", "id_ed25519")); err != nil {
				errs <- fmt.Errorf("Loop's own read %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A denied path inside the workspace stays denied: the workspace is split
// around it, its other entries stay writable.
func TestDeniedPathInsideTheWorkspaceStaysDenied(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	p := l.policy(false)
	p.Writable = append(p.Writable, l.home) // the workspace is the whole home
	if out, ok := run(t, p, l.home, "cat .ssh/id_ed25519"); ok {
		t.Errorf("read a denied key inside the workspace: %s", out)
	}
	if out, ok := run(t, p, l.home, "echo x >> .ssh/authorized_keys"); ok {
		t.Errorf("wrote a denied directory inside the workspace: %s", out)
	}
	if out, ok := run(t, p, l.home, "echo x >> .bashrc && echo y > src/new"); !ok {
		t.Errorf("writing the workspace around a denied path failed: %s", out)
	}
}

// Loop's data root stays read-only even where it lies in a writable
// directory (here the temp directory); the rest of that directory stays
// writable, but new entries cannot be made directly in it.
func TestDataRootInsideAWritableDirectoryStaysReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	l := newLayout(t)
	data := filepath.Join(l.tmp, "loop")
	if err := os.MkdirAll(filepath.Join(data, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(l.tmp, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := l.policy(false)
	p.ReadOnly = []string{data}
	if out, ok := run(t, p, l.ws, "echo x > "+filepath.Join(data, "sessions", "x")); ok {
		t.Errorf("wrote the data root: %s", out)
	}
	if out, ok := run(t, p, l.ws, "echo x > "+filepath.Join(l.tmp, "other", "x")); !ok {
		t.Errorf("writing beside the data root failed: %s", out)
	}
}

// BenchmarkStart is a command started and awaited with and without the
// sandbox, with a workspace in the temp directory and the key stores of
// the real home denied; the difference is what the sandbox adds to a bash
// call (docs/performance.md).
func BenchmarkStart(b *testing.B) {
	st := sandbox.Probe()
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{
		Writable: []string{ws, os.TempDir()},
		ReadOnly: []string{filepath.Join(home, ".local", "share", "loop")},
		Deny:     sandbox.DefaultDeny(home),
	}
	for _, sandboxed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(b *testing.B) {
			if sandboxed && !st.Available {
				b.Skipf("SKIP: the OS sandbox is %s", st)
			}
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.Dir = ws
				var err error
				if sandboxed {
					err = sandbox.Start(cmd, p)
				} else {
					err = cmd.Start()
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
