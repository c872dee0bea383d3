package main

import (
	"strconv"
	"strings"

	"github.com/loopdev/loop/engine"
)

// openFork is --fork SESSION[@MESSAGECOUNT] (docs/cli.md): a new session
// whose history is the first MESSAGECOUNT saved messages of SESSION (an
// id or a path, as --session takes), by default all of them. The source
// is not changed.
func (f *sessionFlags) openFork(e *engine.Engine) (*engine.Session, error) {
	name, count, whole := splitForkArg(f.fork)
	src, err := openNamed(e, name)
	if err != nil {
		return nil, err
	}
	if f.cwd != "" && !sameDir(f.cwd, src.Cwd()) {
		return nil, usagef("--cwd %s: session %s works in %s (a fork works where its session does)", f.cwd, src.ID(), src.Cwd())
	}
	if whole {
		count = src.Snapshot().State.MessageCount
	}
	return src.Fork(count, "")
}

// splitForkArg splits SESSION@MESSAGECOUNT; a name without "@" and digits
// at its end (an id, or a path that may hold an "@" of its own) is the
// session, forked whole.
func splitForkArg(arg string) (name string, count int, whole bool) {
	i := strings.LastIndexByte(arg, '@')
	if i <= 0 {
		return arg, 0, true
	}
	n, err := strconv.Atoi(arg[i+1:])
	if err != nil || n < 0 || strings.ContainsAny(arg[i+1:], "+-") {
		return arg, 0, true
	}
	return arg[:i], n, false
}
