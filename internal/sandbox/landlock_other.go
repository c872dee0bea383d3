//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// Probe reports that only Linux has a sandbox implementation.
func Probe() Status {
	return Status{Reason: "Loop has no OS sandbox for " + runtime.GOOS + " (only Linux, with Landlock)"}
}

// Start starts nothing: there is no sandbox here.
func Start(*exec.Cmd, Policy) error { return ErrUnavailable }

// RunHelper refuses: there is no sandbox to apply here.
func RunHelper(args []string) int {
	if _, _, err := parseHelperArgs(args); err != nil {
		fmt.Fprintf(os.Stderr, "loop sandbox: %v\n", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "loop sandbox: %v: %s\n", ErrUnavailable, Probe().Reason)
	return 126
}
