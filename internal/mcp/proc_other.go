//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

var (
	sigTerm os.Signal = os.Kill // no SIGTERM to send: stop at once
	sigKill os.Signal = os.Kill
)

func setProcGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}
