package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runLoop runs loop in this process with args and returns its exit
// status and stderr.
func runLoop(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	code = run(args, nil, &out, &errs)
	return code, out.String(), errs.String()
}

// checkOneLine checks that stderr is the one line want, which names what
// was typed once, in plain words (no log record's time= and level=).
func checkOneLine(t *testing.T, stderr, want, typed string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not one line:\n%s", stderr)
	}
	line := strings.TrimSuffix(stderr, "\n")
	if !regexp.MustCompile(want).MatchString(line) {
		t.Fatalf("stderr %q, want %q", line, want)
	}
	if n := strings.Count(line, typed); n != 1 {
		t.Fatalf("%q names %q %d times", line, typed, n)
	}
	if strings.Contains(line, "level=") || strings.Contains(line, "time=") {
		t.Fatalf("a log record, not a line: %q", line)
	}
}

// Every command-line error is one plain line on stderr that names what
// the user typed (docs/cli.md), with the documented exit status: a
// --limit out of range is refused, not replaced by the default, and a
// typo'd session id is "no session", not a failed lstat of a file.
func TestCommandLineErrorsAreOneLineNamingWhatWasTyped(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"hi"}]}]}`)
	t.Setenv(ttyEnv, "none")
	t.Chdir(proj)
	missing := "01a230e1-1440-764b-b596-db391c64bf55"
	for _, tc := range []struct {
		args        []string
		status      int
		want, typed string
	}{
		{[]string{"search", "--data-dir", data, "--all", "--limit", "0", "x"}, exitUsage, `^loop search: --limit 0: must be 1 to 100$`, "--limit 0"},
		{[]string{"search", "--data-dir", data, "--all", "--limit", "101", "x"}, exitUsage, `^loop search: --limit 101: must be 1 to 100$`, "--limit 101"},
		{[]string{"search", "--data-dir", data, "--cwd", "nope", "x"}, exitUsage, `^loop search: --cwd nope: no such directory$`, "nope"},
		{[]string{"run", "--data-dir", data, "--session", "abc", "x"}, exitUsage, `^loop run: session_not_found: no session "abc": no session id starts with it, and no file or directory has that name$`, "abc"},
		{[]string{"run", "--data-dir", data, "--session", missing, "x"}, exitUsage, `^loop run: session_not_found: no session "` + missing + `" in the data root `, missing},
		{[]string{"run", "--data-dir", data, "--cwd", "nope", "x"}, exitUsage, `^loop run: --cwd nope: no such directory$`, "nope"},
		{[]string{"export", "--data-dir", data, "abc"}, exitUsage, `^loop export: session_not_found: no session "abc"`, "abc"},
		{[]string{"export", "--data-dir", data, missing}, exitUsage, `^loop export: session_not_found: no session "` + missing + `" in the data root `, missing},
		{[]string{"--log-level", "loud"}, exitUsage, `^loop: --log-level "loud": must be debug, info, warn or error$`, "loud"},
	} {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), data, "DATA"), func(t *testing.T) {
			code, stdout, stderr := runLoop(t, tc.args...)
			if code != tc.status {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tc.status, stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout: %q", stdout)
			}
			checkOneLine(t, stderr, tc.want, tc.typed)
		})
	}
}

// A result loop run cannot save is told once, on one line that names the
// file that refused it once and the recovery file that holds the result;
// before, the run's error and the recovery line both told it, each
// naming the same path twice ("create X: open X: is a directory").
func TestRunSaveFailureIsOneLineNamingThePathOnce(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"match":"one","steps":[{"text":"first"}]},{"match":"two","steps":[{"text":"second"}]}]}`)
	t.Setenv(ttyEnv, "none")
	if code, _, stderr := runLoop(t, "run", "--data-dir", data, "--cwd", proj, "one"); code != exitOK {
		t.Fatalf("first run: %d\n%s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("sessions: %v", dirs)
	}
	blocker := filepath.Join(dirs[0], "header.json.tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLoop(t, "run", "--data-dir", data, "--session", filepath.Base(dirs[0]), "two")
	if code != exitUnsaved || stdout != "second\n" {
		t.Fatalf("exit status %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	want := `^loop run: session \S+: could not save \(save history: publish header: open \S+/header\.json\.tmp: is a directory\); its unsaved result is in \S+/loop-recovery-\S+\.json$`
	checkOneLine(t, stderr, want, blocker)
}

// What the engine logs while loop run works (here: an MCP server entry
// that cannot be used) reaches stderr as a line like the command's
// others, not as a log record.
func TestRunWritesEngineWarningsAsPlainLines(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"hi"}]}]}`)
	cfg := `{"mcpServers":{"bad":{"command":""}},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ttyEnv, "none")
	code, stdout, stderr := runLoop(t, "run", "--data-dir", data, "--cwd", proj, "hello")
	if code != exitOK || stdout != "hi\n" {
		t.Fatalf("exit status %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	checkOneLine(t, stderr, `^loop run: mcpServers: some entries are not usable: mcpServers "bad": set command \(stdio\) or url \(HTTP\)$`, `"bad"`)
}
