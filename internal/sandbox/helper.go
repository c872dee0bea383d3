package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HelperArg is the first argument that makes the loop binary the sandbox
// helper (cmd/loop/main.go): RunHelper applies a policy to itself and
// execs a command. It serves commands Loop does not start itself, such as
// the ones an editor runs in its terminal (docs/acp.md).
const HelperArg = "__loop-sandbox"

// HelperLine is a shell command line that runs argv in the OS sandbox p
// through helper, the loop binary: helper HelperArg POLICY -- argv...
func HelperLine(helper string, p Policy, argv []string) (string, error) {
	policy, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("sandbox policy: %w", err)
	}
	words := append([]string{helper, HelperArg, string(policy), "--"}, argv...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " "), nil
}

// shellQuote quotes s for a POSIX shell: single quotes, each ' spelled '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// parseHelperArgs reads RunHelper's arguments: POLICY -- argv...
func parseHelperArgs(args []string) (Policy, []string, error) {
	var p Policy
	if len(args) < 3 || args[1] != "--" {
		return p, nil, fmt.Errorf("usage: loop %s POLICY -- COMMAND [ARG...]", HelperArg)
	}
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return p, nil, fmt.Errorf("sandbox policy: %w", err)
	}
	return p, args[2:], nil
}
