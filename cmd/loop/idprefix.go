package main

import (
	"fmt"
	"strings"

	"github.com/loopdev/loop/store"
)

// maxCandidates is how many of the ids an ambiguous prefix names are
// listed in its error.
const maxCandidates = 10

// sessionIDOf is the session id that arg is a unique prefix of, among the
// sessions stored under root: "" when arg could not start an id (it holds
// other characters than an id's, or is as long as one) or no id starts
// with it; a usage error listing them when several do (docs/cli.md:
// "Session ids").
func sessionIDOf(root *store.Root, arg string) (string, error) {
	if !couldStartID(arg) {
		return "", nil
	}
	ids, err := root.IDsWithPrefix(strings.ToLower(arg))
	if err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", nil
	case 1:
		return ids[0], nil
	}
	shown := ids[:min(len(ids), maxCandidates)]
	more := ""
	if len(ids) > len(shown) {
		more = fmt.Sprintf(", and %d more", len(ids)-len(shown))
	}
	return "", usagef("session id prefix %q is ambiguous: %d sessions start with it: %s%s (type more of the id)",
		arg, len(ids), strings.Join(shown, ", "), more)
}

// couldStartID reports whether s could be the start of a session id (a
// UUID in its 36-character form), shorter than a whole one.
func couldStartID(s string) bool {
	if s == "" || len(s) >= 36 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF-", c) {
			return false
		}
	}
	return true
}
