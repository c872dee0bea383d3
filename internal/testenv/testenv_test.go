package testenv

import (
	"testing"
)

// fakeTB records how a test ended.
type fakeTB struct {
	testing.TB
	failed, skipped string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = format }
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = format }

func TestAMissingNeedFailsUnderCIAndIsSkippedLoudlyElsewhere(t *testing.T) {
	t.Setenv("CI", "true")
	f := &fakeTB{}
	Missing(f, "no pseudo-terminal: %v", "ENXIO")
	if f.failed == "" || f.skipped != "" {
		t.Fatalf("under CI: failed %q, skipped %q; want a failure", f.failed, f.skipped)
	}
	t.Setenv("CI", "")
	f = &fakeTB{}
	Missing(f, "no pseudo-terminal: %v", "ENXIO")
	if f.failed != "" || f.skipped != "SKIP (required under CI): %s" {
		t.Fatalf("outside CI: failed %q, skipped %q; want a loud skip", f.failed, f.skipped)
	}
}
