package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree adds files for ls, grep and find next to the fixture's.
func tree(t *testing.T, f fixture) {
	t.Helper()
	mustWrite(t, filepath.Join(f.ws, "src/main.go"), "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n")
	mustWrite(t, filepath.Join(f.ws, "src/util/util.go"), "package util\n\n// hello helper\nfunc Hello() string { return \"hello\" }\n")
	mustWrite(t, filepath.Join(f.ws, "src/util/util_test.ts"), "hello ts\n")
	mustWrite(t, filepath.Join(f.ws, ".git/config"), "hello git\n")
	mustWrite(t, filepath.Join(f.ws, "node_modules/x/index.js"), "hello node\n")
	mustWrite(t, filepath.Join(f.ws, "image.bin"), "hello\x00binary\n")
	mustWrite(t, filepath.Join(f.ws, ".hidden"), "hello hidden\n")
}

func TestLs(t *testing.T) {
	f := newFixture(t)
	tree(t, f)
	env := f.env("")
	got := wantOK(t, run(t, env, NameLs, map[string]any{}))
	want := ".git/\n.hidden\ndangling -> ../outside/nothere\nfile.txt\nimage.bin\nlink_in -> sub/\nlink_out -> ../outside/\nnode_modules/\nsrc/\nsub/\n"
	if got != want {
		t.Fatalf("ls:\n%s\nwant:\n%s", got, want)
	}
	if got := wantOK(t, run(t, env, NameLs, map[string]any{"path": "src"})); got != "main.go\nutil/\n" {
		t.Fatalf("ls src: %q", got)
	}
	if got := wantOK(t, run(t, env, NameLs, map[string]any{"path": "link_in"})); got != "inner.txt\n" {
		t.Fatalf("ls through inside link: %q", got)
	}
	os.Mkdir(filepath.Join(f.ws, "void"), 0o755)
	if got := wantOK(t, run(t, env, NameLs, map[string]any{"path": "void"})); !strings.Contains(got, "empty directory") {
		t.Fatalf("empty: %q", got)
	}
	wantErr(t, run(t, env, NameLs, map[string]any{"path": "file.txt"}), "not a directory")
	wantErr(t, run(t, env, NameLs, map[string]any{"path": "nope"}), "no such file")
	wantErr(t, run(t, env, NameLs, map[string]any{"path": "link_out"}), "permission denied")
	wantErr(t, run(t, env, NameLs, map[string]any{"path": 1}), "must be a string")
	// The cap.
	for i := 0; i < lsMaxEntries+5; i++ {
		mustWrite(t, filepath.Join(f.ws, "many", fmt.Sprintf("f%04d", i)), "")
	}
	r := run(t, env, NameLs, map[string]any{"path": "many"})
	if got := wantOK(t, r); !strings.HasSuffix(got, "f0499\n[5 more entries not shown; use find with a pattern to narrow down]\n") || r.Details["truncated"] != true {
		t.Fatalf("cap: %q", got[len(got)-100:])
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	tree(t, f)
	env := f.env("")
	got := wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "hello"}))
	want := ".hidden:1: hello hidden\nsrc/util/util.go:3: // hello helper\nsrc/util/util.go:4: func Hello() string { return \"hello\" }\nsrc/util/util_test.ts:1: hello ts\n"
	if got != want {
		t.Fatalf("grep:\n%s\nwant:\n%s", got, want)
	}
	got = wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "hello", "ignoreCase": true, "glob": "*.go"}))
	if got != "src/main.go:4: \tprintln(\"Hello\")\nsrc/util/util.go:3: // hello helper\nsrc/util/util.go:4: func Hello() string { return \"hello\" }\n" {
		t.Fatalf("grep -i glob: %q", got)
	}
	got = wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "^func", "path": "src/util", "glob": "**/*.{go,ts}"}))
	if got != "src/util/util.go:4: func Hello() string { return \"hello\" }\n" {
		t.Fatalf("grep path: %q", got)
	}
	// A single file, and a directory reached through an inside link.
	if got := wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "^[bg]", "path": "file.txt"})); got != "file.txt:2: beta\nfile.txt:3: gamma\n" {
		t.Fatalf("grep file: %q", got)
	}
	if got := wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "inner", "path": "link_in"})); got != "link_in/inner.txt:1: inner\n" {
		t.Fatalf("grep link dir: %q", got)
	}
	// The walk does not follow the escaping link.
	if got := wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "secret"})); !strings.HasPrefix(got, "No matches") {
		t.Fatalf("grep followed a link: %q", got)
	}
	// limit.
	r := run(t, env, NameGrep, map[string]any{"pattern": "hello", "limit": 2})
	if got := wantOK(t, r); strings.Count(got, "\n") != 3 || !strings.Contains(got, "Stopped after 2 matches") || r.Details["truncated"] != true {
		t.Fatalf("limit: %q", got)
	}
	// Long lines are clipped.
	mustWrite(t, filepath.Join(f.ws, "long.txt"), strings.Repeat("z", 1000)+"needle\n")
	if got := wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "needle", "path": "long.txt"})); len(got) > grepShownLine+40 || !strings.HasSuffix(got, " ...\n") {
		t.Fatalf("clip: %d bytes", len(got))
	}
}

func TestGrepErrors(t *testing.T) {
	f := newFixture(t)
	tree(t, f)
	env := f.env("")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "("}), "invalid pattern")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": ""}), "pattern is empty")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "glob": "{a"}), "invalid glob")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "glob": "[a"}), "invalid glob")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "limit": 0}), "limit must be between 1 and 2000")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "ignoreCase": "yes"}), `field "ignoreCase" must be a boolean`)
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "path": "nope"}), "no such file")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "path": "image.bin"}), "binary")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "x", "path": "../outside"}), "permission denied")
}

func TestGrepSkipsHugeFiles(t *testing.T) {
	f := newFixture(t)
	mustWrite(t, filepath.Join(f.ws, "huge.log"), "needle\n"+strings.Repeat("x", grepMaxFileSize))
	got := wantOK(t, run(t, f.env(""), NameGrep, map[string]any{"pattern": "needle"}))
	if !strings.Contains(got, "No matches") || !strings.Contains(got, "1 file(s) over 4 MiB were skipped") {
		t.Fatalf("huge: %q", got)
	}
	// Named explicitly, it is searched.
	if got := wantOK(t, run(t, f.env(""), NameGrep, map[string]any{"pattern": "needle", "path": "huge.log"})); got != "huge.log:1: needle\n" {
		t.Fatalf("huge by name: %q", got)
	}
}

func TestFind(t *testing.T) {
	f := newFixture(t)
	tree(t, f)
	env := f.env("")
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "*.go"})); got != "src/main.go\nsrc/util/util.go\n" {
		t.Fatalf("find *.go: %q", got)
	}
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "src/**/*.{go,ts}"})); got != "src/main.go\nsrc/util/util.go\nsrc/util/util_test.ts\n" {
		t.Fatalf("find **: %q", got)
	}
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "util"})); got != "src/util/\n" {
		t.Fatalf("find dir: %q", got)
	}
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "*.go", "path": "src/util"})); got != "src/util/util.go\n" {
		t.Fatalf("find in path: %q", got)
	}
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "*.txt", "path": "link_in"})); got != "link_in/inner.txt\n" {
		t.Fatalf("find via link: %q", got)
	}
	// .git, node_modules and the escaping link's contents are not listed.
	got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "**"}))
	for _, bad := range []string{".git/", "node_modules", "secret"} {
		if strings.Contains(got, bad) {
			t.Fatalf("find ** lists %s:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "link_out\n") {
		t.Fatalf("the link itself should be listed:\n%s", got)
	}
	r := run(t, env, NameFind, map[string]any{"pattern": "**", "limit": 2})
	if got := wantOK(t, r); strings.Count(got, "\n") != 3 || !strings.Contains(got, "Stopped after 2 results") {
		t.Fatalf("limit: %q", got)
	}
	if got := wantOK(t, run(t, env, NameFind, map[string]any{"pattern": "*.rs"})); !strings.HasPrefix(got, "No paths") {
		t.Fatalf("none: %q", got)
	}
	// Absolute path under full-access, outside the workspace: absolute output.
	if got := wantOK(t, run(t, f.env(PresetFullAccess), NameFind, map[string]any{"pattern": "*.txt", "path": f.outside})); got != filepath.Join(f.outside, "secret.txt")+"\n" {
		t.Fatalf("outside: %q", got)
	}
	wantErr(t, run(t, env, NameFind, map[string]any{"pattern": "["}), "invalid pattern")
	wantErr(t, run(t, env, NameFind, map[string]any{}), `missing required field "pattern"`)
	wantErr(t, run(t, env, NameFind, map[string]any{"pattern": "*", "path": "file.txt"}), "not a directory")
	wantErr(t, run(t, env, NameFind, map[string]any{"pattern": "*", "path": "link_out"}), "permission denied")
	wantErr(t, run(t, env, NameFind, map[string]any{"pattern": "*", "limit": 99999}), "limit must be between 1 and 5000")
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/b/main.go", true},
		{"*.go", "main.go/x", false},
		{"src/*.go", "src/main.go", true},
		{"src/*.go", "src/a/main.go", false},
		{"src/**/*.go", "src/main.go", true},
		{"src/**/*.go", "src/a/b/main.go", true},
		{"src/**", "src/a/b", true},
		{"**/test/**", "a/test/b.txt", true},
		{"**/test/**", "a/tests/b.txt", false},
		{"./src/*.go", "src/x.go", true},
		{"*.{ts,tsx}", "a/b.tsx", true},
		{"*.{ts,tsx}", "a/b.js", false},
		{"{a,b{c,d}}/x", "bd/x", true},
		{"{a,b{c,d}}/x", "b/x", false},
		{"?.txt", "a.txt", true},
		{"[ab].txt", "c.txt", false},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := g.match(c.path); got != c.want {
			t.Errorf("%q ~ %q = %v", c.pattern, c.path, got)
		}
	}
	for _, bad := range []string{"", "{a,b", "[x"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
	if _, err := compileGlob("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}"); err == nil {
		t.Error("brace explosion compiled")
	}
}
