package rpctest

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	spec := map[string]int{"set": 1, "error": 2, "always": 0, "name": 1}
	flags, rest, err := parseFlags(strings.Fields("-set A=x.0 --set B= -always -error -32000 no -name n m -set not-a-flag"), spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"set": {"A=x.0", "B="}, "always": {""}, "error": {"-32000", "no"}, "name": {"n"}}
	if !reflect.DeepEqual(flags, want) || !reflect.DeepEqual(rest, []string{"m", "-set", "not-a-flag"}) {
		t.Fatalf("flags %v rest %v", flags, rest)
	}
	if _, rest, _ := parseFlags([]string{"--", "-x"}, spec); !reflect.DeepEqual(rest, []string{"-x"}) {
		t.Fatalf("-- did not end flags: %v", rest)
	}
	for _, bad := range [][]string{{"-nope"}, {"-error", "1"}} {
		if _, _, err := parseFlags(bad, spec); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`a\r\nb`:         "a\r\nb",
		`\t\\`:           "\t\\",
		`{"s":"\"q\""}`:  `{"s":"\"q\""}`,
		`\u00e9\`:        `\u00e9\`,
		`a\xffb\xC3\x28`: "a\xffb\xc3\x28",
		`\x4`:            `\x4`,
		`\xzz`:           `\xzz`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLookupAndFilters(t *testing.T) {
	v, _ := decode([]byte(`{"sessions":[{"id":"a","n":1.50,"ok":true,"x":null}],"m":{"k":[1]}}`))
	for path, want := range map[string]string{
		"sessions.0.id": "a", "sessions.0.n": "1.50", "sessions.0.ok": "true", "sessions.0.x": "null",
		"m": `{"k":[1]}`, "m.k.0": "1",
	} {
		got, ok := lookup(v, path)
		if !ok || text(got) != want {
			t.Errorf("lookup %s = %v %v, want %s", path, got, ok, want)
		}
	}
	for _, path := range []string{"sessions.1", "sessions.x", "m.k.0.z", "nope"} {
		if _, ok := lookup(v, path); ok {
			t.Errorf("lookup %s found something", path)
		}
	}
	fs, err := parseFilters([]string{"sessions.0.id=a", "m={\"k\":[1]}", "sessions.0.n~^1\\."})
	if err != nil || !matches(v, fs) {
		t.Fatalf("filters %v: %v", fs, err)
	}
	if fs, _ := parseFilters([]string{"sessions.0.id=b"}); matches(v, fs) {
		t.Fatal("wrong value matched")
	}
	if _, err := parseFilters([]string{"novalue"}); err == nil {
		t.Fatal("filter without = parsed")
	}
}

// startEcho starts the echo server that TestMain registers on $PATH.
func startEcho(t *testing.T) *server {
	t.Helper()
	path, err := exec.LookPath("echoserver")
	if err != nil {
		t.Skip("echoserver is only on $PATH under testscript.Main")
	}
	s, err := start("t", false, path, nil, os.Environ(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	return s
}

func TestServerFailures(t *testing.T) {
	s := startEcho(t)
	const long = time.Minute // a guard: every failure below is immediate

	// Non-protocol bytes on stdout are recorded; the reply still arrives.
	if m, err := s.call("stdout-junk", nil, long); err != nil || string(m.result) != "true" {
		t.Fatalf("stdout-junk: %v %v", m, err)
	}
	s.mu.Lock()
	errs := append([]string(nil), s.protoErrs...)
	s.mu.Unlock()
	if len(errs) != 1 || !strings.Contains(errs[0], "this is not JSON") {
		t.Fatalf("protocol errors: %q", errs)
	}

	// A request that never gets its reply times out (the server waits for
	// an answer to its own request that nobody gives).
	if _, err := s.call("ask", json.RawMessage(`{"method":"client/ask"}`), 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "within 50ms") {
		t.Fatalf("ask: %v", err)
	}

	// A server that dies in the middle of a call fails the call at once:
	// with the reason, not after the timeout (whose error would name it).
	if _, err := s.call("exit", json.RawMessage(`{"code":4}`), long); err == nil || !strings.Contains(err.Error(), "closed its stdout") {
		t.Fatalf("exit: %v", err)
	}
	if _, err := s.call("echo", nil, long); err == nil || !strings.Contains(err.Error(), "cannot call echo") {
		t.Fatalf("call after exit: %v", err)
	}
	<-s.exited
	if code := s.cmd.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("exit code %d", code)
	}
}
