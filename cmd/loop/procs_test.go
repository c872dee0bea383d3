package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands for loop run, whose exit status is part of its contract
// (docs/cli.md) and which testscript's exec cannot check exactly:
//
//	status [-stdin FILE] N PROG ARGS...   run PROG; its exit status must be N
//	launch [-stdin FILE] NAME PROG ARGS... start PROG in the background
//	interrupt NAME                         send SIGINT to it
//	exitstatus NAME N                      wait for it; its exit status must be N
//	waitfile FILE                          wait until FILE exists (a scripted model's touchFile)
//	jsonvar VAR PATH                       set VAR from the last JSON line of stdout (PATH: a.b.c)
//	jsonlines                              check stdout is JSON lines; print each line's method (or "result")
//	globvar VAR PATTERN                    set VAR to the one path matching PATTERN
//	jsonfile [-nl] FILE PATH               write a string of the last JSON line of stdout to FILE (-nl: and a newline)
//	tree DIR                               print every path under DIR, sorted, files with their SHA-256
//
// The output of status and exitstatus becomes stdout and stderr for the
// lines that follow, as exec's does.
func procCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"status":     cmdStatus,
		"launch":     cmdLaunch,
		"interrupt":  cmdInterrupt,
		"exitstatus": cmdExitStatus,
		"waitfile":   cmdWaitFile,
		"jsonvar":    cmdJSONVar,
		"jsonfile":   cmdJSONFile,
		"jsonlines":  cmdJSONLines,
		"globvar":    cmdGlobVar,
		"tree":       cmdTree,
	}
}

// envKeysKey holds the names of the variables Setup defined, so commands
// can pass the script's current environment on (testscript cannot list it).
type envKeysKey struct{}

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

type procsKey struct{}

func procs(ts *testscript.TestScript) map[string]*proc {
	return ts.Value(procsKey{}).(map[string]*proc)
}

// setupProcs records the environment's names and a table of processes,
// killed when the script ends.
func setupProcs(env *testscript.Env) {
	var keys []string
	for _, kv := range env.Vars {
		if k, _, ok := strings.Cut(kv, "="); ok {
			keys = append(keys, k)
		}
	}
	env.Values[envKeysKey{}] = keys
	table := map[string]*proc{}
	env.Values[procsKey{}] = table
	env.Defer(func() {
		for _, p := range table {
			if p.cmd.Process != nil {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
}

func start(ts *testscript.TestScript, args []string) *proc {
	stdin := ""
	if len(args) >= 2 && args[0] == "-stdin" {
		stdin = ts.ReadFile(args[1])
		args = args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("no program to run")
	}
	path := lookPathIn(ts.Getenv("PATH"), args[0])
	if path == "" {
		ts.Fatalf("%s not found on PATH", args[0])
	}
	p := &proc{cmd: exec.Command(path, args[1:]...), done: make(chan error, 1)}
	p.cmd.Args[0] = args[0]
	p.cmd.Dir = ts.MkAbs(".")
	for _, k := range ts.Value(envKeysKey{}).([]string) {
		p.cmd.Env = append(p.cmd.Env, k+"="+ts.Getenv(k))
	}
	p.cmd.Env = append(p.cmd.Env, "PWD="+p.cmd.Dir)
	p.cmd.Stdin = strings.NewReader(stdin)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		ts.Fatalf("start %s: %v", args[0], err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p
}

func lookPathIn(pathList, name string) string {
	for _, dir := range filepath.SplitList(pathList) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// finish waits for p and checks its exit status.
func finish(ts *testscript.TestScript, p *proc, want string) {
	n, err := strconv.Atoi(want)
	if err != nil {
		ts.Fatalf("exit status %q is not a number", want)
	}
	var werr error
	select {
	case werr = <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		ts.Fatalf("%s did not exit", p.cmd.Args[0])
	}
	fmt.Fprint(ts.Stdout(), p.stdout.String())
	fmt.Fprint(ts.Stderr(), p.stderr.String())
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		got = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			got = 128 + int(ws.Signal())
		}
	case werr != nil:
		ts.Fatalf("%s: %v", p.cmd.Args[0], werr)
	}
	if got != n {
		ts.Logf("stdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())
		ts.Fatalf("%s exited with status %d, want %d", p.cmd.Args[0], got, n)
	}
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status [-stdin FILE] N PROG ARGS...")
	}
	var pre []string
	if args[0] == "-stdin" {
		pre, args = args[:2], args[2:]
	}
	want := args[0]
	p := start(ts, slices.Concat(pre, args[1:]))
	finish(ts, p, want)
}

func cmdLaunch(ts *testscript.TestScript, neg bool, args []string) {
	var pre []string
	if len(args) > 0 && args[0] == "-stdin" {
		pre, args = args[:2], args[2:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: launch [-stdin FILE] NAME PROG ARGS...")
	}
	procs(ts)[args[0]] = start(ts, slices.Concat(pre, args[1:]))
}

func named(ts *testscript.TestScript, name string) *proc {
	p, ok := procs(ts)[name]
	if !ok {
		ts.Fatalf("no process %q was launched", name)
	}
	return p
}

func cmdInterrupt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: interrupt NAME")
	}
	if err := named(ts, args[0]).cmd.Process.Signal(os.Interrupt); err != nil {
		ts.Fatalf("interrupt: %v", err)
	}
}

func cmdExitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: exitstatus NAME N")
	}
	p := named(ts, args[0])
	delete(procs(ts), args[0])
	finish(ts, p, args[1])
}

func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.Fatalf("%s never appeared", args[0])
}

func lastJSONLine(ts *testscript.TestScript) map[string]any {
	lines := strings.Split(strings.TrimRight(ts.ReadFile("stdout"), "\n"), "\n")
	var v map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		ts.Fatalf("the last line of stdout is not a JSON object: %v\n%s", err, lines[len(lines)-1])
	}
	return v
}

func cmdJSONVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonvar VAR PATH")
	}
	ts.Setenv(args[0], jsonAt(ts, args[1]))
}

func cmdJSONFile(ts *testscript.TestScript, neg bool, args []string) {
	nl := len(args) > 0 && args[0] == "-nl"
	if nl {
		args = args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonfile [-nl] FILE PATH")
	}
	v := jsonAt(ts, args[1])
	if nl {
		// txtar files end in a newline; the value may not.
		v += "\n"
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(v), 0o600); err != nil {
		ts.Fatalf("%v", err)
	}
}

// jsonAt is the member at a dotted path of stdout's last JSON line: a
// string as it is, anything else as JSON.
func jsonAt(ts *testscript.TestScript, path string) string {
	args := []string{"", path}
	var v any = lastJSONLine(ts)
	for _, k := range strings.Split(args[1], ".") {
		m, ok := v.(map[string]any)
		if !ok {
			ts.Fatalf("%s: %q is not inside an object", args[1], k)
		}
		if v, ok = m[k]; !ok {
			ts.Fatalf("%s: no member %q", args[1], k)
		}
	}
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return s
}

// cmdJSONLines checks that stdout is stream-json: notifications exactly
// {"jsonrpc":"2.0","method","params"}, then one {"result"} line.
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: jsonlines")
	}
	lines := strings.Split(strings.TrimRight(ts.ReadFile("stdout"), "\n"), "\n")
	var out strings.Builder
	for i, line := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			ts.Fatalf("line %d is not a JSON object: %v\n%s", i+1, err, line)
		}
		if i == len(lines)-1 {
			if _, ok := m["result"]; !ok || len(m) != 1 {
				ts.Fatalf("the last line is not {\"result\": ...}: %s", line)
			}
			out.WriteString("result\n")
			continue
		}
		var method string
		if len(m) != 3 || string(m["jsonrpc"]) != `"2.0"` || json.Unmarshal(m["method"], &method) != nil || m["params"] == nil {
			ts.Fatalf("line %d is not a notification: %s", i+1, line)
		}
		out.WriteString(method + "\n")
	}
	fmt.Fprint(ts.Stdout(), out.String())
}

func cmdGlobVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: globvar VAR PATTERN")
	}
	m, err := filepath.Glob(ts.MkAbs(args[1]))
	if err != nil || len(m) != 1 {
		ts.Fatalf("%s matches %d paths (%v), want 1", args[1], len(m), err)
	}
	ts.Setenv(args[0], m[0])
}

func cmdTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tree DIR")
	}
	root := ts.MkAbs(args[0])
	var paths []string
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, rel)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		line := p
		if data, err := os.ReadFile(filepath.Join(root, p)); err == nil {
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		fmt.Fprintln(ts.Stdout(), line)
	}
}
