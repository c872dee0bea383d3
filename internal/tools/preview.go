package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// PreviewDiff is what a write or an edit call would change, as a unified
// diff, for a person asked to approve it ("" for other tools, and when the
// change cannot be computed: the call itself will say why it fails). It
// reads the file as it is now, bounded as the tools bound it.
func PreviewDiff(cwd, tool string, input json.RawMessage) string {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		OldText *string `json:"oldText"`
		NewText *string `json:"newText"`
		Edits   []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
	}
	if (tool != NameWrite && tool != NameEdit) || json.Unmarshal(input, &a) != nil || a.Path == "" {
		return ""
	}
	abs := a.Path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	old, created := "", false
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil, !fi.Mode().IsRegular(), fi.Size() > maxFileChange:
		return ""
	default:
		b, err := os.ReadFile(abs)
		if err != nil || isBinary(b[:min(len(b), 8000)]) {
			return ""
		}
		old = string(b)
	}
	switch tool {
	case NameWrite:
		if a.Content == nil {
			return ""
		}
		return unifiedDiff(a.Path, old, *a.Content, created).text
	default:
		if created {
			return ""
		}
		var reps []replacement
		for _, e := range a.Edits {
			reps = append(reps, replacement{e.OldText, e.NewText})
		}
		if a.OldText != nil && a.NewText != nil {
			reps = append(reps, replacement{*a.OldText, *a.NewText})
		}
		newText, err := applyEdits(old, reps, a.Path)
		if err != nil {
			return ""
		}
		return unifiedDiff(a.Path, old, newText, false).text
	}
}
