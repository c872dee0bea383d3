package tools

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
)

// read numbers each line without padding: "N\t" costs fewer tokens than
// "cat -n"'s six columns (docs/performance.md).
func TestReadNumbersEachLineWithoutPadding(t *testing.T) {
	f := newFixture(t)
	r := run(t, f.env(""), NameRead, map[string]any{"path": "file.txt"})
	if got := wantOK(t, r); got != "1\talpha\n2\tbeta\n3\tgamma\n" {
		t.Fatalf("read: %q", got)
	}
	if r.Details["path"] != filepath.Join(f.ws, "file.txt") || r.Details["totalLines"] != 3 || r.Details["truncated"] != false {
		t.Fatalf("details: %v", r.Details)
	}
	// offset and limit, with a note on how to continue.
	got := wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "file.txt", "offset": 2, "limit": 1}))
	if !strings.HasPrefix(got, "2\tbeta\n") || !strings.Contains(got, "lines 2-2 of 3") || !strings.Contains(got, "offset=3") {
		t.Fatalf("read window: %q", got)
	}
	// A last line without newline, and CRLF endings, read cleanly.
	mustWrite(t, filepath.Join(f.ws, "crlf.txt"), "a\r\nb")
	if got := wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "crlf.txt"})); got != "1\ta\n2\tb\n" {
		t.Fatalf("crlf: %q", got)
	}
	// Through a symlink that stays inside, and by absolute path.
	wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "link_in/inner.txt"}))
	wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": filepath.Join(f.ws, "file.txt")}))
	// Empty file.
	mustWrite(t, filepath.Join(f.ws, "empty"), "")
	if got := wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "empty"})); !strings.Contains(got, "empty") {
		t.Fatalf("empty: %q", got)
	}
}

func TestReadCaps(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	mustWrite(t, filepath.Join(f.ws, "long.txt"), b.String())
	got := wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "long.txt"}))
	if !strings.Contains(got, "2000\tline 2000\n") || strings.Contains(got, "line 2001\n") ||
		!strings.Contains(got, "lines 1-2000 of 2500") || !strings.Contains(got, "offset=2001") {
		t.Fatalf("line cap: ...%s", got[len(got)-200:])
	}
	got = wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "long.txt", "offset": 2001}))
	if !strings.HasPrefix(got, "2001\tline 2001\n") || !strings.HasSuffix(got, "2500\tline 2500\n") {
		t.Fatalf("continue: %q...", got[:40])
	}
	// The byte cap: 100 lines of 3000 bytes exceed 256 KiB.
	b.Reset()
	for i := 0; i < 100; i++ {
		b.WriteString(strings.Repeat("x", 3000) + "\n")
	}
	mustWrite(t, filepath.Join(f.ws, "wide.txt"), b.String())
	r := run(t, f.env(""), NameRead, map[string]any{"path": "wide.txt"})
	got = wantOK(t, r)
	if len(got) > readMaxBytes+500 || !strings.Contains(got, "KiB cap") || r.Details["truncated"] != true {
		t.Fatalf("byte cap: %d bytes, tail %q", len(got), got[len(got)-150:])
	}
	// A very long line is cut with a note.
	mustWrite(t, filepath.Join(f.ws, "minified.js"), strings.Repeat("y", 20000)+"\nshort\n")
	got = wantOK(t, run(t, f.env(""), NameRead, map[string]any{"path": "minified.js"}))
	if !strings.Contains(got, "[line cut: 20000 bytes in all]") || !strings.Contains(got, "2\tshort\n") || len(got) > 5000 {
		t.Fatalf("long line: %d bytes", len(got))
	}
}

func TestReadImage(t *testing.T) {
	f := newFixture(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	mustWrite(t, filepath.Join(f.ws, "pic.dat"), png) // detected by content, not extension
	r := run(t, f.env(""), NameRead, map[string]any{"path": "pic.dat"})
	wantOK(t, r)
	if len(r.Content) != 2 || r.Content[1].Type != convo.BlockImage || r.Content[1].MimeType != "image/png" {
		t.Fatalf("image blocks: %+v", r.Content)
	}
	if data, _ := base64.StdEncoding.DecodeString(r.Content[1].Data); string(data) != png {
		t.Fatal("image data differs")
	}
	for name, head := range map[string]string{
		"image/jpeg": "\xff\xd8\xff\xe0\x00\x10JFIF",
		"image/gif":  "GIF89a\x01\x00",
		"image/webp": "RIFF\x10\x00\x00\x00WEBPVP8 ",
	} {
		if got := imageType([]byte(head)); got != name {
			t.Errorf("imageType %s: %q", name, got)
		}
	}
}

func TestReadErrors(t *testing.T) {
	f := newFixture(t)
	mustWrite(t, filepath.Join(f.ws, "bin"), "ELF\x00\x01\x02")
	mustWrite(t, filepath.Join(f.ws, "latin1"), "caf\xe9\n")
	env := f.env("")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "missing.txt"}), "missing.txt", "no such file")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "sub"}), "directory", "ls")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "bin"}), "binary")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "latin1"}), "binary")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": 9}), "past the end", "3 lines")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": 0}), "offset must be 1 or more")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "limit": 0}), "limit must be 1 or more")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": ""}), "path must not be empty")
	wantErr(t, run(t, env, NameRead, map[string]any{}), `missing required field "path"`)
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "lines": 3}), `unknown field "lines"`, "allowed: path, offset, limit")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": "2"}), `field "offset" must be an integer, got a string`)
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "file.txt", "offset": 1.5}), `must be an integer`)
	wantErr(t, run(t, env, NameRead, `[1]`), "must be a JSON object")
	wantErr(t, run(t, env, NameRead, `{"path":`), "not valid JSON")
	// Run re-checks containment under confined presets even without Decide.
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "link_out/secret.txt"}), "permission denied", "symbolic link")
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "../outside/secret.txt"}), "permission denied")
	if got := wantOK(t, run(t, f.env(PresetFullAccess), NameRead, map[string]any{"path": "../outside/secret.txt"})); !strings.Contains(got, "secret") {
		t.Fatalf("full-access read outside: %q", got)
	}
	// An integral float and null optional fields are accepted.
	wantOK(t, run(t, env, NameRead, `{"path":"file.txt","offset":2.0,"limit":null}`))
}

func TestSpecialFilesDoNotBlock(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.ws, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	env := f.env(PresetWorkspaceWrite)
	wantErr(t, run(t, env, NameRead, map[string]any{"path": "fifo"}), "not a regular file")
	wantErr(t, run(t, env, NameWrite, map[string]any{"path": "fifo", "content": "x"}), "not a regular file")
	wantErr(t, run(t, env, NameEdit, map[string]any{"path": "fifo", "oldText": "a", "newText": "b"}), "not a regular file")
	wantErr(t, run(t, env, NameGrep, map[string]any{"pattern": "a", "path": "fifo"}), "not a regular file")
	wantOK(t, run(t, env, NameGrep, map[string]any{"pattern": "a"})) // the walk skips it
}

// An image read into the history must stay under the providers' limit
// (5 MiB of base64 at Anthropic), or every later request fails.
func TestReadImageCap(t *testing.T) {
	f := newFixture(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	mustWrite(t, filepath.Join(f.ws, "max.png"), png+strings.Repeat("\x00", readMaxImage-len(png)))
	r := run(t, f.env(""), NameRead, map[string]any{"path": "max.png"})
	wantOK(t, r)
	if n := len(r.Content[1].Data); n >= 5_000_000 {
		t.Fatalf("base64 of the largest image read returns is %d bytes", n)
	}
	mustWrite(t, filepath.Join(f.ws, "big image.png"), png+strings.Repeat("\x00", readMaxImage+1-len(png)))
	r = run(t, f.env(""), NameRead, map[string]any{"path": "big image.png"})
	wantErr(t, r, "too large", "3749998 bytes", "smaller", `'big image.png'`)
}
