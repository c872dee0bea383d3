package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	r := run(t, env, NameWrite, map[string]any{"path": "a/b/new.txt", "content": "one\ntwo\n"})
	if got := wantOK(t, r); got != "Created a/b/new.txt (8 bytes)." {
		t.Fatalf("create: %q", got)
	}
	if mustRead(t, filepath.Join(f.ws, "a/b/new.txt")) != "one\ntwo\n" {
		t.Fatal("content")
	}
	wantDiff := "--- /dev/null\n+++ b/a/b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
	if r.Details["diff"] != wantDiff || r.Details["path"] != filepath.Join(f.ws, "a/b/new.txt") ||
		r.Details["created"] != true || r.Details["bytes"] != 8 || r.Details["newText"] != "one\ntwo\n" {
		t.Fatalf("details: %#v", r.Details)
	}

	// Overwrite keeps the mode and reports a diff.
	path := filepath.Join(f.ws, "file.txt")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, NameWrite, map[string]any{"path": "file.txt", "content": "alpha\nBETA\ngamma\n"})
	if got := wantOK(t, r); got != "Overwrote file.txt (17 bytes)." {
		t.Fatalf("overwrite: %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if d := r.Details["diff"].(string); !strings.Contains(d, "-beta\n+BETA\n") || r.Details["oldText"] != "alpha\nbeta\ngamma\n" {
		t.Fatalf("diff: %q", d)
	}
	if lines := r.Details["changedLines"].([]int); len(lines) != 1 || lines[0] != 2 {
		t.Fatalf("changed lines %v", lines)
	}
	// Same content.
	if got := wantOK(t, run(t, env, NameWrite, map[string]any{"path": "file.txt", "content": "alpha\nBETA\ngamma\n"})); !strings.Contains(got, "already the same") {
		t.Fatalf("same: %q", got)
	}
	// Writing through a symlink inside replaces the target, not the link.
	wantOK(t, run(t, env, NameWrite, map[string]any{"path": "link_in/inner.txt", "content": "changed\n"}))
	if mustRead(t, filepath.Join(f.ws, "sub/inner.txt")) != "changed\n" {
		t.Fatal("write through symlink")
	}
	if fi, _ := os.Lstat(filepath.Join(f.ws, "link_in")); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("link replaced")
	}
	// No temp files are left behind.
	entries, _ := os.ReadDir(f.ws)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".loop-") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
	// Empty content is a valid write.
	wantOK(t, run(t, env, NameWrite, map[string]any{"path": "empty.txt", "content": ""}))
}

func TestWriteErrors(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "sub", "content": "x"}), "directory")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "file.txt/x", "content": "x"}), "not a directory")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "x"}), `missing required field "content"`)
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "x", "content": 5}), `field "content" must be a string`)
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "", "content": ""}), "path must not be empty")
	// Containment is re-checked, including a new file under an escaping link
	// and a dangling link that points outside.
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "link_out/new.txt", "content": "x"}), "permission denied")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "dangling", "content": "x"}), "permission denied")
	if _, err := os.Stat(filepath.Join(f.outside, "new.txt")); err == nil {
		t.Fatal("wrote outside")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "nothere")); err == nil {
		t.Fatal("wrote through dangling link")
	}
	// full-access writes anywhere, through the dangling link too.
	wantOK(t, run(t, f.env(PresetFullAccess), NameWrite, map[string]any{"path": "dangling", "content": "x"}))
	if mustRead(t, filepath.Join(f.outside, "nothere")) != "x" {
		t.Fatal("full-access write through dangling link")
	}
}

func TestWriteBigAndBinary(t *testing.T) {
	f := newFixture(t)
	env := f.env(PresetWorkspaceWrite)
	big := strings.Repeat("0123456789abcdef\n", 40000) // 680 KB
	r := run(t, env, NameWrite, map[string]any{"path": "big.txt", "content": big})
	wantOK(t, r)
	d := r.Details["diff"].(string)
	if len(d) > maxDetailText+100 || r.Details["diffTruncated"] != true || !strings.HasSuffix(d, "[diff cut: 720048 bytes in all]\n") {
		t.Fatalf("big diff: %d bytes, tail %q", len(d), d[len(d)-60:])
	}
	if _, ok := r.Details["newText"]; ok {
		t.Fatal("big newText kept in details")
	}
	if n := len(r.Details["changedLines"].([]int)); n != maxChangedLines {
		t.Fatalf("%d changed lines listed", n)
	}
	mustWrite(t, filepath.Join(f.ws, "blob"), "\x00\x01\x02")
	r = run(t, env, NameWrite, map[string]any{"path": "blob", "content": "text\n"})
	if got := wantOK(t, r); !strings.Contains(got, "binary file") || !strings.Contains(r.Details["diff"].(string), "Binary file blob") {
		t.Fatalf("binary overwrite: %q %v", got, r.Details["diff"])
	}
}
