package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture builds base/ws (the workspace) next to base/outside:
//
//	ws/file.txt             "alpha\nbeta\ngamma\n"
//	ws/sub/inner.txt        "inner\n"
//	ws/link_in  -> sub            (stays inside)
//	ws/link_out -> ../outside     (escapes)
//	ws/dangling -> ../outside/nothere
//	outside/secret.txt      "secret\n"
type fixture struct {
	base, ws, outside string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mustWrite(t, filepath.Join(f.ws, "file.txt"), "alpha\nbeta\ngamma\n")
	mustWrite(t, filepath.Join(f.ws, "sub", "inner.txt"), "inner\n")
	mustWrite(t, filepath.Join(f.outside, "secret.txt"), "secret\n")
	mustSymlink(t, "sub", filepath.Join(f.ws, "link_in"))
	mustSymlink(t, "../outside", filepath.Join(f.ws, "link_out"))
	mustSymlink(t, "../outside/nothere", filepath.Join(f.ws, "dangling"))
	return f
}

func (f fixture) env(p Preset) Env { return Env{Cwd: f.ws, Preset: p} }

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// js marshals v as tool arguments.
func js(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run calls the named tool and returns its result.
func run(t *testing.T, env Env, name string, a any) Result {
	t.Helper()
	tool, ok := Lookup(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	var raw json.RawMessage
	switch v := a.(type) {
	case string:
		raw = json.RawMessage(v)
	default:
		raw = js(t, a)
	}
	return tool.Run(context.Background(), env, raw, nil)
}

func wantOK(t *testing.T, r Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Text())
	}
	return r.Text()
}

func wantErr(t *testing.T, r Result, substrs ...string) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result, got: %s", r.Text())
	}
	for _, s := range substrs {
		if !strings.Contains(r.Text(), s) {
			t.Errorf("error %q does not mention %q", r.Text(), s)
		}
	}
	return r.Text()
}
