package main

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
)

func TestFileFlagAttachesImagesAndTextAsSessionPromptChecksThem(t *testing.T) {
	dir := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pic, notes := write("shot.dat", png), write("notes.md", []byte("# notes\n"))
	k := runKnobs{files: []string{pic, notes}}
	in := engine.PromptInput{RequestID: "r", Text: "look"}
	if err := k.attach(&in); err != nil {
		t.Fatal(err)
	}
	if len(in.Images) != 1 || in.Images[0].MimeType != "image/png" || in.Images[0].Data != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("images %+v", in.Images)
	}
	if len(in.Files) != 1 || in.Files[0].Name != "notes.md" || in.Files[0].Text != "# notes\n" {
		t.Fatalf("files %+v", in.Files)
	}

	// What session/prompt refuses is bad usage here, in its words.
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{write("blob", []byte{0, 1, 2, 3})}, "invalid_text_files"},
		{[]string{write("tool.exe", []byte("MZ"))}, "invalid_text_files"},
		{[]string{notes, notes, notes, notes, notes}, "invalid_text_files: at most 4 files"},
		{[]string{filepath.Join(dir, "missing.txt")}, "no such file"},
	} {
		k := runKnobs{files: c.files}
		in := engine.PromptInput{RequestID: "r", Text: "look"}
		err := k.attach(&in)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error saying %q", c.files, err, c.want)
		}
	}
}
