//go:build !unix

package tools

import (
	"os"
	"os/exec"
	"time"
)

// Without process groups only the shell itself can be killed; what it
// started may survive.
func startGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd, _ time.Duration, waitDone <-chan error) error {
	_ = cmd.Process.Kill()
	return <-waitDone
}

func signalName(*os.ProcessState) string { return "" }
