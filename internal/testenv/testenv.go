// Package testenv is what tests say when the machine lacks something
// they need: a pseudo-terminal, named pipes, /proc, a program.
package testenv

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Missing ends a test that cannot run here because the machine lacks
// what it needs. Under CI (CI set to a true value, as .ci/run sets it)
// it fails the test: CI's machine must run every test, and a skipped one
// would pass unseen. Elsewhere the test is skipped with a line starting
// "SKIP (required under CI)", so that the skip is seen in -v output.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	if OnCI() {
		tb.Fatalf("%s; under CI (CI=%s) this test must run, not be skipped", why, os.Getenv("CI"))
		return
	}
	tb.Skipf("SKIP (required under CI): %s", why)
}

// OnCI reports whether the tests run under CI.
func OnCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}
