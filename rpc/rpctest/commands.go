package rpctest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rpc start [-lsp|-ndjson] [-name N] [-env NAME[=VALUE]]... cmd [args...]
func cmdStart(c *cmdCtx) {
	if len(c.args) == 0 {
		c.fatalf("usage: rpc start [-lsp|-ndjson] [-name N] [-env NAME[=VALUE]]... command [args...]")
	}
	if c.has("lsp") && c.has("ndjson") {
		c.fatalf("rpc start: -lsp and -ndjson exclude each other")
	}
	name := c.flag("name", "default")
	if old := c.st.servers[name]; old != nil {
		select {
		case <-old.exited:
		default:
			c.fatalf("rpc start: server %q is still running (rpc stop it first, or use -name)", name)
		}
	}
	path := lookPath(c, c.args[0])
	dir := c.ts.MkAbs(".")
	s, err := start(name, c.has("lsp"), path, c.args[1:], c.environ(dir), dir, c.st.recorderFor(name, c.args))
	if err != nil {
		c.fatalf("rpc start %s: %v", c.args[0], err)
	}
	c.st.servers[name] = s
	c.st.reported[s] = 0
}

// environ is the script's environment with current values: the variables
// testscript and Setup defined (testscript cannot list those set later by
// `env`), plus each -env.
func (c *cmdCtx) environ(dir string) []string {
	vals := make(map[string]string)
	var order []string
	add := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range c.st.env.Vars {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			add(k, c.ts.Getenv(k))
		}
	}
	for _, e := range c.flags["env"] {
		if k, v, ok := strings.Cut(e, "="); ok {
			add(k, v)
		} else {
			add(e, c.ts.Getenv(e))
		}
	}
	add("PWD", dir)
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// rpc call [-timeout D] [-set VAR=path]... method [json|@file]
func cmdCall(c *cmdCtx) {
	if len(c.args) < 1 || len(c.args) > 2 {
		c.fatalf("usage: rpc call [-name N] [-timeout D] [-set VAR=path]... method [json|@file]")
	}
	var params json.RawMessage
	if len(c.args) == 2 {
		params = c.jsonArg(c.args[1])
	}
	m, err := c.s.call(c.args[0], params, c.timeout())
	if err != nil {
		c.fatalf("rpc call %s: %v\n%s", c.args[0], err, c.s.tail())
	}
	if m.err != nil {
		if !c.neg {
			c.fatalf("rpc call %s failed:\n%s", c.args[0], pretty(m.err))
		}
		c.print(m.err)
		return
	}
	if c.neg {
		c.fatalf("rpc call %s succeeded, want an error; result:\n%s", c.args[0], pretty(m.result))
	}
	c.print(m.result)
}

// print writes raw JSON sorted and indented, and applies -set to it.
func (c *cmdCtx) print(raw json.RawMessage) {
	fmt.Fprintln(c.ts.Stdout(), pretty(raw))
	if len(c.flags["set"]) > 0 {
		v, err := decode(raw)
		if err != nil {
			c.fatalf("rpc: %v", err)
		}
		c.setVars(v)
	}
}

// rpc notify method [json|@file]
func cmdNotify(c *cmdCtx) {
	if len(c.args) < 1 || len(c.args) > 2 {
		c.fatalf("usage: rpc notify [-name N] method [json|@file]")
	}
	var params json.RawMessage
	if len(c.args) == 2 {
		params = c.jsonArg(c.args[1])
	}
	body := notification(c.args[0], params)
	c.s.record.frame(false, false, body)
	if err := c.s.send(frame(c.s.lsp, body), c.timeout()); err != nil {
		c.fatalf("rpc notify %s: %v", c.args[0], err)
	}
}

// rpc respond [-always] [-error CODE MESSAGE [-data json]] method [json|@file]
func cmdRespond(c *cmdCtx) {
	usage := "usage: rpc respond [-name N] [-always] method result-json|@file\n   or: rpc respond [-name N] [-always] -error CODE MESSAGE [-data json|@file] method"
	var a answer
	if ev := c.flags["error"]; len(ev) > 0 {
		if len(c.args) != 1 {
			c.fatalf("%s", usage)
		}
		code, err := strconv.ParseInt(ev[len(ev)-2], 10, 64)
		if err != nil {
			c.fatalf("rpc respond: -error code %q is not an integer", ev[len(ev)-2])
		}
		e := map[string]any{"code": code, "message": ev[len(ev)-1]}
		if d := c.flag("data", ""); d != "" {
			e["data"] = json.RawMessage(c.jsonArg(d))
		}
		b, _ := json.Marshal(e)
		a.err = b
	} else {
		if len(c.args) != 2 || c.has("data") {
			c.fatalf("%s", usage)
		}
		a.result = c.jsonArg(c.args[1])
	}
	c.s.respond(c.args[0], a, c.has("always"))
}

// rpc wait [-timeout D] [-set VAR=path]... method [path=value|path~regexp]...
func cmdWait(c *cmdCtx) {
	if len(c.args) < 1 {
		c.fatalf("usage: rpc wait [-name N] [-timeout D] [-set VAR=path]... method [path=value|path~regexp]...")
	}
	method := c.args[0]
	filters, err := parseFilters(c.args[1:])
	if err != nil {
		c.fatalf("rpc wait: %v", err)
	}
	what := strings.TrimSpace(method + " " + strings.Join(c.args[1:], " "))
	e := c.await(what, func(m *message) (any, bool) {
		if m.method != method {
			return nil, false
		}
		v, _ := decode(m.params)
		return v, matches(v, filters)
	})
	if e != nil {
		c.print(e.msg.params)
	}
}

// rpc wait-error [-timeout D] [-set VAR=path]... [path=value|path~regexp]...
func cmdWaitError(c *cmdCtx) {
	filters, err := parseFilters(c.args)
	if err != nil {
		c.fatalf("rpc wait-error: %v", err)
	}
	what := strings.TrimSpace("error response " + strings.Join(c.args, " "))
	e := c.await(what, func(m *message) (any, bool) {
		if !m.isResponse() || m.err == nil {
			return nil, false
		}
		v, _ := decode(m.err)
		return v, matches(v, filters)
	})
	if e != nil {
		c.print(e.msg.err)
	}
}

// await blocks until an unconsumed entry satisfies match, and consumes it.
// Negated, it succeeds when none arrives before the timeout or the end of
// output, and returns nil.
func (c *cmdCtx) await(what string, match func(*message) (any, bool)) *entry {
	timeout := c.timeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	s := c.s
	for {
		s.mu.Lock()
		var found *entry
		for _, e := range s.log {
			if !e.consumed {
				if _, ok := match(e.msg); ok {
					found = e
					e.consumed = true
					break
				}
			}
		}
		ended, changed := s.readErr != nil, s.changed
		s.mu.Unlock()
		switch {
		case found != nil && c.neg:
			c.fatalf("rpc wait: got %s, want none:\n%s", what, pretty(found.msg.raw))
		case found != nil:
			return found
		case ended && c.neg:
			return nil
		case ended:
			c.fatalf("rpc wait: nothing matching %s came: %s\n%s\n%s", what, s.why(), c.recent(), s.tail())
		}
		select {
		case <-changed:
		case <-deadline.C:
			if c.neg {
				return nil
			}
			c.fatalf("rpc wait: nothing matching %s within %v (%s)\n%s\n%s", what, timeout, s.state(), c.recent(), s.tail())
		}
	}
}

// recent lists what arrived and was not consumed, for failure messages.
func (c *cmdCtx) recent() string {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var b strings.Builder
	n := 0
	for _, e := range c.s.log {
		if !e.consumed {
			n++
			if n <= 20 {
				b.WriteString("  " + compactMessage(e.msg) + "\n")
			}
		}
	}
	if n == 0 {
		return "nothing else unconsumed has arrived"
	}
	if n > 20 {
		fmt.Fprintf(&b, "  ... and %d more\n", n-20)
	}
	return "unconsumed messages:\n" + strings.TrimRight(b.String(), "\n")
}

// compactMessage is a message as transcript prints it: sorted keys, no
// "jsonrpc" member.
func compactMessage(m *message) string {
	v, err := decode(m.raw)
	if err != nil {
		return string(m.raw)
	}
	if obj, ok := v.(map[string]any); ok {
		delete(obj, "jsonrpc")
	}
	return encode(v, false)
}

// rpc transcript [-methods m1,m2] [-new]
func cmdTranscript(c *cmdCtx) {
	if len(c.args) != 0 {
		c.fatalf("usage: rpc transcript [-name N] [-methods m1,m2] [-new]")
	}
	var methods map[string]bool
	if v := c.flag("methods", ""); v != "" {
		methods = make(map[string]bool)
		for _, m := range strings.Split(v, ",") {
			methods[strings.TrimSpace(m)] = true
		}
	}
	onlyNew := c.has("new")
	c.s.mu.Lock()
	var lines []string
	for _, e := range c.s.log {
		if methods != nil && !methods[e.msg.method] || onlyNew && e.printed {
			continue
		}
		e.printed = true
		lines = append(lines, compactMessage(e.msg))
	}
	c.s.mu.Unlock()
	for _, l := range lines {
		fmt.Fprintln(c.ts.Stdout(), l)
	}
}

// rpc send-raw 'text with \r\n escapes'
func cmdSendRaw(c *cmdCtx) {
	if len(c.args) != 1 {
		c.fatalf("usage: rpc send-raw [-name N] 'text'  (\\r \\n \\t \\\\ \\xHH are escapes)")
	}
	raw := []byte(unescape(c.args[0]))
	c.s.record.frame(false, true, raw)
	if err := c.s.send(raw, c.timeout()); err != nil {
		c.fatalf("rpc send-raw: %v", err)
	}
}

// rpc close-stdin
func cmdCloseStdin(c *cmdCtx) {
	if len(c.args) != 0 {
		c.fatalf("usage: rpc close-stdin [-name N]")
	}
	c.s.closeStdin()
}

// rpc stop [-exit N|any] [-timeout D]
func cmdStop(c *cmdCtx) {
	if len(c.args) != 0 {
		c.fatalf("usage: rpc stop [-name N] [-exit N|any] [-timeout D]")
	}
	want := c.flag("exit", "0")
	if want != "any" {
		if _, err := strconv.Atoi(want); err != nil {
			c.fatalf("rpc stop: -exit %q: want an integer or any", want)
		}
	}
	s := c.s
	timeout := c.timeout()
	t := time.NewTimer(timeout)
	defer t.Stop()
	s.mu.Lock()
	signalled := s.signalled
	s.mu.Unlock()
	if !signalled {
		s.closeStdin()
	}
	// After a signal, stdin stays open until the process is gone, so that
	// what is tested is the signal path, not the EOF path racing it.
	select {
	case <-s.exited:
	case <-t.C:
		s.kill()
		c.fatalf("rpc stop: server %q did not exit within %v; killed\n%s", s.name, timeout, s.tail())
	}
	s.closeStdin()
	select {
	case <-s.readDone:
	case <-t.C:
		c.fatalf("rpc stop: server %q exited but its stdout stayed open (a child process holds it?)", s.name)
	}
	fmt.Fprint(c.ts.Stderr(), s.stderr.String())
	got := s.cmd.ProcessState.ExitCode()
	if want != "any" && strconv.Itoa(got) != want {
		c.fatalf("rpc stop: server %q %s, want exit status %s\n%s", s.name, exitText(s.cmd.ProcessState), want, s.tail())
	}
}

// rpc kill [-signal TERM|INT|KILL|HUP|QUIT]
func cmdKill(c *cmdCtx) {
	if len(c.args) != 0 {
		c.fatalf("usage: rpc kill [-name N] [-signal TERM|INT|KILL|HUP|QUIT]")
	}
	sigs := map[string]os.Signal{"TERM": syscall.SIGTERM, "INT": os.Interrupt, "KILL": os.Kill, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT}
	name := strings.TrimPrefix(strings.ToUpper(c.flag("signal", "KILL")), "SIG")
	sig, ok := sigs[name]
	if !ok {
		c.fatalf("rpc kill: unknown signal %q", c.flag("signal", ""))
	}
	c.s.mu.Lock()
	c.s.signalled = true
	c.s.mu.Unlock()
	if err := c.s.cmd.Process.Signal(sig); err != nil {
		c.fatalf("rpc kill: %v", err)
	}
}

// rpc stderr [-timeout D] [regexp]: what the server wrote to stderr so far.
// With a regexp, first wait until stderr matches it: stderr is a pipe of its
// own, so a line written before a reply may still be on its way.
func cmdStderr(c *cmdCtx) {
	if len(c.args) > 1 {
		c.fatalf("usage: rpc stderr [-name N] [-timeout D] [regexp]")
	}
	text, changed := c.s.stderr.snapshot()
	if len(c.args) == 1 {
		re, err := regexp.Compile(c.args[0])
		if err != nil {
			c.fatalf("rpc stderr: %v", err)
		}
		timeout := c.timeout()
		t := time.NewTimer(timeout)
		defer t.Stop()
		for !re.MatchString(text) {
			select {
			case <-changed:
			case <-c.s.exited:
				// Wait has copied all of stderr by now.
				if text = c.s.stderr.String(); !re.MatchString(text) {
					c.fatalf("rpc stderr: server %s; stderr never matched %q:\n%s", exitText(c.s.cmd.ProcessState), c.args[0], text)
				}
				continue
			case <-t.C:
				c.fatalf("rpc stderr: no match for %q within %v:\n%s", c.args[0], timeout, text)
			}
			text, changed = c.s.stderr.snapshot()
		}
	}
	fmt.Fprint(c.ts.Stdout(), text)
}
