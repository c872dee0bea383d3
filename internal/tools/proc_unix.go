//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// startGroup starts the command in a new session, which also makes it the
// leader of its own process group: killGroup finds everything it started by
// the session id, and without a controlling terminal a program that opens
// /dev/tty for a password prompt fails at once instead of stopping the
// group until the timeout.
func startGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// killGroup ends the command and everything it started: SIGTERM, then
// SIGKILL once grace has passed and anything is left. It returns the shell's
// Wait error.
//
// The shell leads its own session, so the session id is its pid. Signals go
// to every process of that session, not only to its process group: programs
// such as coreutils timeout, and the jobs of a shell under set -m, move to
// a group of their own but stay in the session. Only a process that starts
// a session of its own (setsid, a daemon) gets away, as it means to.
func killGroup(cmd *exec.Cmd, grace time.Duration, waitDone <-chan error) error {
	sid := cmd.Process.Pid
	signalSession(sid, syscall.SIGTERM)
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
			if exited && !sessionAlive(sid) {
				return waitErr
			}
		case <-deadline.C:
			killSession(sid)
			if !exited {
				waitErr = <-waitDone
			}
			return waitErr
		}
	}
}

// signalSession sends sig to every process of session sid, and to the
// process group sid, which is all it can reach where /proc cannot list the
// session.
func signalSession(sid int, sig syscall.Signal) {
	_ = syscall.Kill(-sid, sig)
	pids, _ := sessionMembers(sid)
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// killSession SIGKILLs session sid until none of it runs. A process may fork
// between the listing and its kill, and its child would be missed by one
// pass; a killed process forks no more, so a few passes catch them all.
func killSession(sid int) {
	for range 10 {
		signalSession(sid, syscall.SIGKILL)
		if pids, ok := sessionMembers(sid); !ok || len(pids) == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// sessionAlive reports whether a process of session sid still runs. Without
// /proc it asks the kernel about the process group instead, where zombies
// count too, which only costs waiting out the grace.
func sessionAlive(sid int) bool {
	pids, ok := sessionMembers(sid)
	if !ok {
		return killProbe(sid)
	}
	return len(pids) > 0
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

// killProbe asks the kernel whether process group pgid exists (zombies
// included).
func killProbe(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}
