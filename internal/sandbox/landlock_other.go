//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"
)

// Probe reports that only Linux has a sandbox implementation.
func Probe() Status {
	return Status{Reason: "Loop has no OS sandbox for " + runtime.GOOS + " (only Linux, with Landlock)"}
}

// Start starts nothing: there is no sandbox here.
func Start(*exec.Cmd, Policy) error { return ErrUnavailable }
