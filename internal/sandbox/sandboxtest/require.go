// Package sandboxtest is for tests that need the OS sandbox.
package sandboxtest

import (
	"os"
	"strconv"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
)

// Require skips t, loudly, where this system cannot sandbox commands (no
// Landlock, or another OS), except under CI (CI=true), where a skipped
// sandbox test would hide that the sandbox was never tried: there it
// fails.
func Require(t testing.TB) sandbox.Status {
	t.Helper()
	st := sandbox.Probe()
	if st.Available {
		return st
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("the OS sandbox is %s; under CI (CI=true) this test must run, not be skipped", st)
	}
	t.Skipf("SKIP: the OS sandbox is %s", st)
	return st
}
