package tools

import (
	"os"
	"strconv"
	"strings"
)

// sessionMembers lists the processes of session sid that still run. Zombies
// do not count: killed orphans wait for their new parent (init, or a
// container runtime that reaps slowly) to collect them, but run no code.
// ok is false when /proc cannot answer: it is missing, or it belongs to
// another pid namespace, whose pid numbers would name other processes.
func sessionMembers(sid int) (pids []int, ok bool) {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return nil, false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// After the parenthesized command, which may hold spaces and
		// parentheses itself: state ppid pgrp session ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if id, err := strconv.Atoi(f[3]); err == nil && id == sid {
			pids = append(pids, pid)
		}
	}
	return pids, true
}
