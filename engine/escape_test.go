package engine_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopdev/loop/engine"
)

// htmlEscapes are what encoding/json writes for <, > and & by default.
var htmlEscapes = [][]byte{[]byte(`\u003c`), []byte(`\u003e`), []byte(`\u0026`)}

// Every file Loop writes under the data root (messages.jsonl, the header,
// runtime.jsonl, the workspace registry) and the scripted model's request
// log keep <, > and & as they are.
func TestFilesLoopWritesDoNotEscapeHTML(t *testing.T) {
	h := newHarness(t, `{"log":"requests.jsonl","turns":[
		{"steps":[{"text":"<i>a1</i> & more"}]},
		{"steps":[{"text":"a2"}]},
		{"purpose":"summary","steps":[{"text":"<summary> & </summary>"}]}]}`)
	if _, err := h.e.AddWorkspace(t.TempDir(), "<R&D>"); err != nil {
		t.Fatal(err)
	}
	s := h.newSession()
	res, err := s.Prompt(engine.PromptInput{RequestID: "r<1>", Text: "<b>&</b>", Files: []engine.File{{Name: "a.html", Text: "<p>&amp;</p>"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("first prompt: %+v", got.Error)
	}
	res, err = s.Prompt(engine.PromptInput{RequestID: "r2", Text: "second"})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(res.RunID)
	if _, err := s.SetTitle("<title> & co"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Shutdown(context.Background(), engine.Drain); err != nil {
		t.Fatal(err)
	}

	all := map[string][]byte{}
	err = filepath.WalkDir(h.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all[filepath.Base(p)] = append(all[filepath.Base(p)], b...)
		for _, esc := range htmlEscapes {
			if bytes.Contains(b, esc) {
				t.Errorf("%s holds %s: %.400s", p, esc, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"messages.jsonl":  `{\"name\":\"a.html\",\"text\":\"<p>&amp;</p>\"}`,
		"runtime.jsonl":   `<summary> & </summary>`,
		"requests.jsonl":  `<b>&</b>`,
		"workspaces.json": `<R&D>`,
	} {
		if !bytes.Contains(all[file], []byte(want)) {
			t.Errorf("%s does not hold %s: %.600s", file, want, all[file])
		}
	}
	if !bytes.Contains(all["messages.jsonl"], []byte("<b>&</b>")) || !bytes.Contains(all["messages.jsonl"], []byte("<i>a1</i> & more")) {
		t.Errorf("messages.jsonl: %.600s", all["messages.jsonl"])
	}
}
