package rpctest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Cmds returns the rpc command, for testscript.Params.Cmds. Setup must run
// for every script too.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"rpc": runRPC}
}

type stateKey struct{}

// state is one script's servers.
type state struct {
	env     *testscript.Env
	servers map[string]*server
	// reported counts the protocol errors of each server already failed on.
	reported map[*server]int
	// record receives every frame (Record); conns counts the servers started.
	record func(Frame)
	conns  int
}

// Setup prepares the per-script state for the rpc command and arranges for
// leftover servers to be killed when the script ends. Call it from
// testscript.Params.Setup (after your own setup, or alone).
func Setup(env *testscript.Env) error {
	st := &state{env: env, servers: make(map[string]*server), reported: make(map[*server]int)}
	env.Values[stateKey{}] = st
	env.Defer(st.cleanup)
	return nil
}

func (st *state) cleanup() {
	for _, s := range st.servers {
		s.kill()
	}
}

const defaultTimeout = 10 * time.Second

// subcommand is one rpc subcommand: its flags (name -> number of values) and
// whether `! rpc ...` means something for it.
type subcommand struct {
	flags  map[string]int
	negOK  bool
	server bool // works on a started server (takes -name)
	run    func(c *cmdCtx)
}

var subcommands = map[string]subcommand{
	"start":       {flags: map[string]int{"lsp": 0, "ndjson": 0, "name": 1, "env": 1}, run: cmdStart},
	"call":        {flags: map[string]int{"timeout": 1, "set": 1}, negOK: true, server: true, run: cmdCall},
	"notify":      {server: true, run: cmdNotify},
	"respond":     {flags: map[string]int{"always": 0, "error": 2, "data": 1}, server: true, run: cmdRespond},
	"wait":        {flags: map[string]int{"timeout": 1, "set": 1}, negOK: true, server: true, run: cmdWait},
	"wait-error":  {flags: map[string]int{"timeout": 1, "set": 1}, negOK: true, server: true, run: cmdWaitError},
	"transcript":  {flags: map[string]int{"methods": 1, "new": 0}, server: true, run: cmdTranscript},
	"send-raw":    {server: true, run: cmdSendRaw},
	"close-stdin": {server: true, run: cmdCloseStdin},
	"stop":        {flags: map[string]int{"exit": 1, "timeout": 1}, server: true, run: cmdStop},
	"kill":        {flags: map[string]int{"signal": 1}, server: true, run: cmdKill},
	"stderr":      {flags: map[string]int{"timeout": 1}, server: true, run: cmdStderr},
}

// cmdCtx is one invocation.
type cmdCtx struct {
	ts    *testscript.TestScript
	neg   bool
	st    *state
	s     *server // the server addressed, for server subcommands
	flags map[string][]string
	args  []string
}

func (c *cmdCtx) fatalf(format string, args ...any) { c.ts.Fatalf(format, args...) }

func (c *cmdCtx) has(flag string) bool { _, ok := c.flags[flag]; return ok }

func (c *cmdCtx) flag(name, def string) string {
	if v := c.flags[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}

func (c *cmdCtx) timeout() time.Duration {
	def := defaultTimeout
	if v := c.ts.Getenv("RPCTEST_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.fatalf("RPCTEST_TIMEOUT: %v", err)
		}
		def = d
	}
	v := c.flag("timeout", "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		c.fatalf("-timeout %q: want a positive duration such as 500ms or 30s", v)
	}
	return d
}

func runRPC(ts *testscript.TestScript, neg bool, args []string) {
	st, _ := ts.Value(stateKey{}).(*state)
	if st == nil {
		ts.Fatalf("rpc: rpctest.Setup did not run: set testscript.Params.Setup to call it")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: rpc start|call|notify|respond|wait|wait-error|transcript|send-raw|close-stdin|stop|kill|stderr ...")
	}
	sub, ok := subcommands[args[0]]
	if !ok {
		ts.Fatalf("rpc: unknown subcommand %q", args[0])
	}
	if neg && !sub.negOK {
		ts.Fatalf("rpc %s: `!` is not supported", args[0])
	}
	spec := sub.flags
	if sub.server {
		spec = make(map[string]int, len(sub.flags)+1)
		for k, v := range sub.flags {
			spec[k] = v
		}
		spec["name"] = 1
	}
	flags, rest, err := parseFlags(args[1:], spec)
	if err != nil {
		ts.Fatalf("rpc %s: %v", args[0], err)
	}
	c := &cmdCtx{ts: ts, neg: neg, st: st, flags: flags, args: rest}
	if sub.server {
		c.s = st.pick(c, c.flag("name", ""))
		c.checkProtocol()
	}
	sub.run(c)
	if c.s != nil {
		c.checkProtocol()
	}
}

// parseFlags reads leading -flags (each taking spec[name] values, which may
// themselves start with '-', as in -error -32000 msg) up to the first
// non-flag or "--".
func parseFlags(args []string, spec map[string]int) (map[string][]string, []string, error) {
	flags := make(map[string][]string)
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		if args[i] == "--" {
			i++
			break
		}
		name := strings.TrimLeft(args[i], "-")
		n, ok := spec[name]
		if !ok {
			known := make([]string, 0, len(spec))
			for k := range spec {
				known = append(known, "-"+k)
			}
			sort.Strings(known)
			return nil, nil, fmt.Errorf("unknown flag %s (flags: %s)", args[i], strings.Join(known, " "))
		}
		if i+n >= len(args) && n > 0 {
			return nil, nil, fmt.Errorf("flag -%s needs %d value(s)", name, n)
		}
		flags[name] = append(flags[name], args[i+1:i+1+n]...)
		if n == 0 {
			flags[name] = append(flags[name], "")
		}
		i += 1 + n
	}
	return flags, args[i:], nil
}

func (st *state) pick(c *cmdCtx, name string) *server {
	if name != "" {
		s := st.servers[name]
		if s == nil {
			c.fatalf("rpc: no server named %q was started", name)
		}
		return s
	}
	switch len(st.servers) {
	case 0:
		c.fatalf("rpc: no server started yet (rpc start ...)")
	case 1:
		for _, s := range st.servers {
			return s
		}
	}
	names := make([]string, 0, len(st.servers))
	for n := range st.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	c.fatalf("rpc: several servers (%s): say which with -name", strings.Join(names, ", "))
	return nil
}

// checkProtocol fails the script once for frames the server should never
// have written (stdout is for protocol frames only).
func (c *cmdCtx) checkProtocol() {
	c.s.mu.Lock()
	errs := c.s.protoErrs[c.st.reported[c.s]:]
	c.st.reported[c.s] = len(c.s.protoErrs)
	c.s.mu.Unlock()
	if len(errs) > 0 {
		c.fatalf("rpc: server %q wrote malformed output:\n%s\n%s", c.s.name, strings.Join(errs, "\n"), c.s.tail())
	}
}

// jsonArg reads a JSON argument: inline or @file, $VAR-expanded, compacted
// (a newline would split an NDJSON frame).
func (c *cmdCtx) jsonArg(arg string) json.RawMessage {
	src := arg
	if strings.HasPrefix(arg, "@") {
		src = c.ts.ReadFile(arg[1:])
	}
	src = os.Expand(src, c.ts.Getenv)
	var buf strings.Builder
	if err := compact(&buf, src); err != nil {
		c.fatalf("rpc: %s is not valid JSON: %v\n%s", arg, err, src)
	}
	return json.RawMessage(buf.String())
}

func compact(w *strings.Builder, src string) error {
	v, err := decode([]byte(src))
	if err != nil {
		return err
	}
	// Re-encoding (rather than json.Compact) also rejects trailing garbage.
	var rest any
	if d := json.NewDecoder(strings.NewReader(src)); d.Decode(&rest) == nil && d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	w.WriteString(encode(v, false))
	return nil
}

// setVars stores -set VAR=path values taken from v.
func (c *cmdCtx) setVars(v any) {
	for _, spec := range c.flags["set"] {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			c.fatalf("rpc: -set %q: want VAR=path.in.result", spec)
		}
		x, found := lookup(v, path)
		if !found {
			c.fatalf("rpc: -set %s: no %q in\n%s", name, path, encode(v, true))
		}
		c.ts.Setenv(name, text(x))
	}
}

// lookPath finds a command on the script's $PATH, as exec does.
func lookPath(c *cmdCtx, name string) string {
	if strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		return c.ts.MkAbs(name)
	}
	for _, dir := range filepath.SplitList(c.ts.Getenv("PATH")) {
		for _, cand := range []string{name, name + ".exe"} {
			p := filepath.Join(dir, cand)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	c.fatalf("rpc start: %s not found in $PATH", name)
	return ""
}
