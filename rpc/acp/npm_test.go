package acp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
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
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("%s; under CI (CI=true) this test must run, not be skipped", why)
		}
		t.Skip(why)
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
