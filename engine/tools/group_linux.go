package tools

import (
	"os"
	"strconv"
	"strings"
)

// groupAlive reports whether a process of group pgid still runs. Zombies do
// not count: killed orphans wait for their new parent (init, or a container
// runtime that reaps slowly) to collect them, but run no code. It scans /proc,
// which is cheap next to the 20 ms poll; without /proc it asks the kernel,
// where zombies do count and only cost waiting out the grace.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return killProbe(pgid)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the parenthesized command: state ppid pgrp ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}
