// Package environ builds the environment of the processes Loop starts
// for tools (bash, MCP stdio servers): Loop's own, less the variables that
// hold provider keys, which a command could otherwise print into a tool
// result, the history and the client (docs/configuration.md).
package environ

import (
	"runtime"
	"strings"
)

// Without returns env (NAME=value entries, as os.Environ gives them)
// without the entries of the given names. env is not modified.
func Without(env []string, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !hidden(name, names) {
			out = append(out, kv)
		}
	}
	return out
}

func hidden(name string, names []string) bool {
	for _, n := range names {
		// Windows treats environment names case-insensitively.
		if n == name || runtime.GOOS == "windows" && strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
