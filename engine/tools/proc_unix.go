//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// startGroup starts the command in a new session, which also makes it the
// leader of its own process group: one signal to the group reaches
// everything it started (that did not leave the group), and without a
// controlling terminal a program that opens /dev/tty for a password prompt
// fails at once instead of stopping the group until the timeout.
func startGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// killGroup ends the command's process group: SIGTERM, then SIGKILL once
// grace has passed and anything is left. It returns the shell's Wait error.
func killGroup(cmd *exec.Cmd, grace time.Duration, waitDone <-chan error) error {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	var waitErr error
	exited := false
	for {
		select {
		case waitErr = <-waitDone:
			exited = true
			waitDone = nil
		case <-poll.C:
			if exited && !groupAlive(pgid) {
				return waitErr
			}
		case <-deadline.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if !exited {
				waitErr = <-waitDone
			}
			return waitErr
		}
	}
}

func signalName(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return unixSignalName(ws.Signal())
}

func unixSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return s.String()
}

// killProbe asks the kernel whether group pgid exists (zombies included).
func killProbe(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}
