package tools

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// bigFile makes a file of size bytes that starts with head and goes on with
// NUL bytes, sparse where the OS allows.
func bigFile(t *testing.T, path, head string, size int64) {
	t.Helper()
	mustWrite(t, path, head)
	if err := os.Truncate(path, size); err != nil {
		t.Skip(err)
	}
}

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// write does not load a huge or binary old file just to diff it.
func TestWriteDoesNotLoadAHugeOrBinaryOldFile(t *testing.T) {
	ws := t.TempDir()
	env := Env{Cwd: ws, Preset: PresetWorkspaceWrite}
	text := strings.Repeat("0123456789abcdef\n", 1000)
	for _, c := range []struct{ name, head, skipped, says string }{
		{"big.txt", text, "the old file is over 8 MiB", "too large to diff"},
		{"big.bin", "x\n", "the old file is binary", "binary file"},
	} {
		p := filepath.Join(ws, c.name)
		bigFile(t, p, c.head, 256<<20)
		var r Result
		n := allocated(func() {
			r = run(t, env, NameWrite, map[string]any{"path": c.name, "content": "small\n"})
		})
		got := wantOK(t, r)
		if !strings.Contains(got, c.says) || r.Details["diffSkipped"] != c.skipped {
			t.Errorf("%s: %q %v", c.name, got, r.Details)
		}
		if _, ok := r.Details["oldText"]; ok {
			t.Errorf("%s: oldText in details", c.name)
		}
		if n > 32<<20 {
			t.Errorf("%s: a 6-byte write over a 256 MiB file allocated %d MiB", c.name, n>>20)
		}
		if mustRead(t, p) != "small\n" {
			t.Errorf("%s not written", c.name)
		}
	}
}

// write diffs the editor's buffer, unless it is over the cap.
func TestWriteDoesNotDiffAHugeBuffer(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "f.txt")
	mustWrite(t, p, "saved\n")
	cfs := newFakeFS()
	cfs.buffers[p] = strings.Repeat("y", maxFileChange+1)
	r := run(t, Env{Cwd: ws, Preset: PresetWorkspaceWrite, FS: cfs}, NameWrite, map[string]any{"path": "f.txt", "content": "new\n"})
	if got := wantOK(t, r); !strings.Contains(got, "too large to diff") || cfs.buffers[p] != "new\n" {
		t.Fatalf("%q %v", got, r.Details["diffSkipped"])
	}
}

// edit refuses a file it would have to hold several times over.
func TestEditRefusesHugeFile(t *testing.T) {
	ws := t.TempDir()
	env := Env{Cwd: ws, Preset: PresetWorkspaceWrite}
	p := filepath.Join(ws, "big.txt")
	bigFile(t, p, "needle\n"+strings.Repeat("hay\n", 4000), 256<<20)
	var r Result
	n := allocated(func() {
		r = run(t, env, NameEdit, map[string]any{"path": "big.txt", "oldText": "needle", "newText": "pin"})
	})
	wantErr(t, r, "268435456 bytes", "more than the 8 MiB edit handles", "bash", "no edit was applied")
	if n > 32<<20 {
		t.Errorf("refusing allocated %d MiB", n>>20)
	}
	if head, _ := diskHead(p); !strings.HasPrefix(string(head), "needle") {
		t.Fatal("the file changed")
	}

	// The editor's copy counts too.
	mustWrite(t, p, "needle\n")
	cfs := newFakeFS()
	cfs.buffers[p] = "needle\n" + strings.Repeat("y", maxFileChange)
	r = run(t, Env{Cwd: ws, Preset: PresetWorkspaceWrite, FS: cfs}, NameEdit, map[string]any{"path": "big.txt", "oldText": "needle", "newText": "pin"})
	wantErr(t, r, "too large", "no edit was applied")
	if _, writes := cfs.calls(); writes != 0 {
		t.Fatal("the editor got a write")
	}
}
