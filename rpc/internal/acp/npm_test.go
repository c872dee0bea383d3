package acp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/testenv"
)

// nodeWithPackages returns the node binary for a test that runs a client
// from testdata/<dir> under node, once `npm ci` has installed pkgs there
// (`make test` does it when npm is available). Without them the test is
// skipped, except under CI (CI=true), where a skipped interop test would
// hide that it never ran: there it fails.
func nodeWithPackages(t *testing.T, dir string, pkgs ...string) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		testenv.Missing(t, "%s", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")); err != nil {
			missing(p + " is not installed: run npm ci in " + dir + " (make test does)")
		}
	}
	return node
}

// probeEnv makes TestNodePackagesProbe (run in a child) ask for a package
// that is never installed.
const probeEnv = "LOOP_NPM_PROBE_DIR"

// TestNodePackagesProbe is the child of TestMissingNodePackagesSkipOrFailUnderCI.
func TestNodePackagesProbe(t *testing.T) {
	dir := os.Getenv(probeEnv)
	if dir == "" {
		t.Skip("run by TestMissingNodePackagesSkipOrFailUnderCI")
	}
	nodeWithPackages(t, dir, "@loop-test/never-installed")
}

// A test whose npm packages are missing is skipped, and fails under CI
// (CI=true): a CI run must not pass without having run it.
func TestMissingNodePackagesSkipOrFailUnderCI(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ci       string
		wantFail bool
	}{{"", false}, {"false", false}, {"true", true}, {"1", true}} {
		cmd := exec.Command(exe, "-test.run", "^TestNodePackagesProbe$", "-test.v")
		cmd.Env = append(os.Environ(), probeEnv+"="+t.TempDir(), "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != c.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v:\n%s", c.ci, failed, c.wantFail, out)
		}
		if !c.wantFail && !strings.Contains(string(out), "--- SKIP: TestNodePackagesProbe") {
			t.Errorf("CI=%q: not skipped:\n%s", c.ci, out)
		}
	}
}

// Without npm, `make npm-deps` (part of `make test`) prints a SKIP line
// naming the directory whose packages are missing; under CI it fails.
func TestMakeSaysSkipWithoutNpm(t *testing.T) {
	bin := t.TempDir()
	// A PATH with the tools the recipe uses, and no npm.
	for _, tool := range []string{"make", "sh", "find", "cmp"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := os.ReadFile(filepath.Join("testdata", "interop", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	deps := t.TempDir()
	if err := os.WriteFile(filepath.Join(deps, "package-lock.json"), lock, 0o600); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	for _, c := range []struct {
		ci       string
		wantFail bool
	}{{"", false}, {"true", true}} {
		cmd := exec.Command(filepath.Join(bin, "make"), "-s", "-C", root, "npm-deps", "NPM_DIRS="+deps)
		cmd.Env = append(os.Environ(), "PATH="+bin, "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v:\n%s", c.ci, failed, c.wantFail, out)
		}
		if !strings.Contains(string(out), "SKIP: npm is not installed") || !strings.Contains(string(out), deps) {
			t.Errorf("CI=%q: no SKIP line naming %s:\n%s", c.ci, deps, out)
		}
	}
}
