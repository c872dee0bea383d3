package rpc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/testenv"
)

// TestProtocolTypeScriptCompilesStrict: what `loop protocol ts` prints is
// TypeScript that tsc --strict accepts, and a client written against it
// (testdata/typescript/use.ts: typed calls, a switch over notifications,
// an approval answer, an error's data.code) compiles. It needs node and
// the typescript package in testdata/typescript (make npm-deps installs
// it); without them it is skipped, and under CI (CI=true) it fails.
func TestProtocolTypeScriptCompilesStrict(t *testing.T) {
	dir := filepath.Join("testdata", "typescript")
	missing := func(why string) {
		t.Helper()
		testenv.Missing(t, "%s", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		missing("typescript is not installed: run npm ci in " + dir + " (make npm-deps does)")
	}
	ts, err := ProtocolTypeScript()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	use, err := os.ReadFile(filepath.Join(dir, "use.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"loop-protocol.ts": ts, "use.ts": use} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(tsc)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, abs, "--strict", "--noEmit", "--target", "es2022", "--module", "esnext",
		"--moduleResolution", "bundler", "--noUnusedParameters", "loop-protocol.ts", "use.ts")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc --strict refuses the output of loop protocol ts: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}
