package tools

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestEdit(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	path := filepath.Join(f.ws, "file.txt")

	// Single form.
	r := run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "beta", "newText": "BETA"})
	if got := wantOK(t, r); got != "Applied 1 edit to file.txt (line 2)." {
		t.Fatalf("single: %q", got)
	}
	if mustRead(t, path) != "alpha\nBETA\ngamma\n" {
		t.Fatal("single content")
	}
	wantDiff := "--- a/file.txt\n+++ b/file.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
	if r.Details["diff"] != wantDiff || r.Details["line"] != 2 || r.Details["path"] != path {
		t.Fatalf("details: %#v", r.Details)
	}

	// Edits apply in order, each to the previous result.
	r = run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []map[string]string{
		{"oldText": "alpha\n", "newText": "alpha\ninserted\n"},
		{"oldText": "inserted\nBETA", "newText": "both"},
		{"oldText": "gamma\n", "newText": ""},
	}})
	if got := wantOK(t, r); got != "Applied 3 edits to file.txt (line 2)." {
		t.Fatalf("multi: %q", got)
	}
	if got := mustRead(t, path); got != "alpha\nboth\n" {
		t.Fatalf("multi content %q", got)
	}
}

func TestEditCRLF(t *testing.T) {
	f := newFixture(t)
	mustWrite(t, filepath.Join(f.ws, "win.txt"), "one\r\ntwo\r\nthree\r\n")
	wantOK(t, run(t, f.env(PresetWorkspaceWrite), NameEdit, map[string]any{"path": "win.txt", "oldText": "one\ntwo", "newText": "1\n2"}))
	if got := mustRead(t, filepath.Join(f.ws, "win.txt")); got != "1\r\n2\r\nthree\r\n" {
		t.Fatalf("crlf edit: %q", got)
	}
}

func TestEditErrors(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	path := filepath.Join(f.ws, "file.txt")
	mustWrite(t, path, "x = 1\nx = 1\ny = 2\n")
	before := mustRead(t, path)

	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "x = 1", "newText": "x = 3"}),
		"occurs 2 times", "exactly once")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "z", "newText": "w"}), "not found")
	// Which edit failed is named, and nothing is written.
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []map[string]string{
		{"oldText": "y = 2", "newText": "y = 3"},
		{"oldText": "y = 2", "newText": "y = 4"},
	}}), "edit 2 of 2", "not found", "as the earlier edits left it")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []map[string]string{
		{"oldText": "y = 2", "newText": "x = 1"},
		{"oldText": "x = 1", "newText": "q"},
	}}), "edit 2 of 2", "occurs 3 times")
	if mustRead(t, path) != before {
		t.Fatal("a failed edit changed the file")
	}
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "", "newText": "a"}), "oldText is empty")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "y = 2", "newText": "y = 2"}), "the same")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "missing.txt", "oldText": "a", "newText": "b"}), "no such file", "use write")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "sub", "oldText": "a", "newText": "b"}), "not a regular file")
	mustWrite(t, filepath.Join(f.ws, "bin"), "a\x00b")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "bin", "oldText": "a", "newText": "b"}), "binary")

	// Argument forms.
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt"}), "missing edits")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "a"}), `missing required field "newText"`)
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []any{}}), "edits is empty")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []map[string]string{{"oldText": "a", "newText": "b"}}, "oldText": "a", "newText": "b"}), "not both")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": "nope"}), `field "edits" must be an array of objects`)
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []any{"a"}}), "edits[0]: arguments must be a JSON object")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "edits": []map[string]any{{"oldText": "a", "newText": "b", "all": true}}}), `edits[0]: unknown field "all"`)
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "link_out/secret.txt", "oldText": "secret", "newText": "x"}), "permission denied")
	if mustRead(t, filepath.Join(f.outside, "secret.txt")) != "secret\n" {
		t.Fatal("edited outside")
	}
}

func TestLineSummary(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, "no lines changed"},
		{[]int{4}, "line 4"},
		{[]int{4, 5, 6, 10}, "lines 4-6, 10"},
	} {
		if got := lineSummary(c.in); got != c.want {
			t.Errorf("%v: %q", c.in, got)
		}
	}
	if got := lineSummary([]int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}); !strings.HasSuffix(got, ", ...") {
		t.Errorf("long: %q", got)
	}
}

// Two occurrences that overlap are two occurrences.
func TestEditOverlappingMatches(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "f.go")
	for _, content := range []string{"}\n}\n}\n", "}\r\n}\r\n}\r\n"} {
		mustWrite(t, p, content)
		wantErr(t, run(t, Env{Cwd: ws, Preset: PresetWorkspaceWrite}, NameEdit, map[string]any{"path": "f.go", "oldText": "}\n}\n", "newText": "X\n"}),
			"more than once", "overlap", "No edit was applied")
		if mustRead(t, p) != content {
			t.Fatal("an ambiguous edit changed the file")
		}
	}
	mustWrite(t, p, "aaa")
	wantErr(t, run(t, Env{Cwd: ws, Preset: PresetWorkspaceWrite}, NameEdit, map[string]any{"path": "f.go", "oldText": "aa", "newText": "b"}), "more than once")
}

// In a CRLF file, plain newlines in newText become CRLF even when oldText
// matched as it was; a mostly-LF file keeps what it is given.
func TestEditCRLFNewText(t *testing.T) {
	ws := t.TempDir()
	env := Env{Cwd: ws, Preset: PresetWorkspaceWrite}
	p := filepath.Join(ws, "f.txt")
	for _, c := range []struct{ in, old, new, want string }{
		{"x = 1\r\ny = 2\r\n", "x = 1", "x = 1\nz = 3", "x = 1\r\nz = 3\r\ny = 2\r\n"},
		{"x = 1\r\ny = 2\r\n", "x = 1\r\n", "x = 1\r\nz = 3\n", "x = 1\r\nz = 3\r\ny = 2\r\n"},
		{"x = 1\ny = 2\n", "x = 1", "x = 1\nz = 3", "x = 1\nz = 3\ny = 2\n"},
	} {
		mustWrite(t, p, c.in)
		wantOK(t, run(t, env, NameEdit, map[string]any{"path": "f.txt", "oldText": c.old, "newText": c.new}))
		if got := mustRead(t, p); got != c.want {
			t.Errorf("%q: %q -> %q: got %q, want %q", c.in, c.old, c.new, got, c.want)
		}
	}
}

// A model that copies lines from read with their numbers still edits
// them: when oldText is not in the file as given, its "N\t" prefixes are
// left out (and newText's, when it has them on every line).
func TestEditMatchesOldTextCopiedFromReadWithLineNumbers(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	path := filepath.Join(f.ws, "file.txt")
	shown := wantOK(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": 2, "limit": 2}))
	old := strings.SplitAfterN(shown, "\n", 3)
	r := run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": old[0] + old[1], "newText": "2\tBETA\n3\tGAMMA\n"})
	if got := wantOK(t, r); !strings.HasPrefix(got, "Applied 1 edit") {
		t.Fatalf("edit: %q", got)
	}
	if got := mustRead(t, path); got != "alpha\nBETA\nGAMMA\n" {
		t.Fatalf("content %q", got)
	}
	// A file whose lines really start with a number and a tab matches as is.
	mustWrite(t, path, "1\tone\n2\ttwo\n")
	wantOK(t, run(t, env, NameEdit, map[string]any{"path": "file.txt", "oldText": "2\ttwo\n", "newText": "2\tTWO\n"}))
	if got := mustRead(t, path); got != "1\tone\n2\tTWO\n" {
		t.Fatalf("numbered file %q", got)
	}
}
