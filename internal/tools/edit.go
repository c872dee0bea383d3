package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

var editPairFields = []field{
	{name: "oldText", typ: "string", required: true, desc: "Exact text to replace, including whitespace and indentation; it must occur exactly once in the file."},
	{name: "newText", typ: "string", required: true, desc: "Text to put in its place."},
}

var editFields = []field{
	{name: "path", typ: "string", required: true, desc: "File to edit, relative to the working directory (or absolute)."},
	{name: "edits", typ: "array", items: editPairFields, desc: "Replacements applied in order, each to the result of the previous one."},
	{name: "oldText", typ: "string", desc: "Single-edit form: exact text to replace (use instead of edits)."},
	{name: "newText", typ: "string", desc: "Single-edit form: text to put in its place."},
}

type editTool struct{}

func (editTool) Name() string { return NameEdit }

func (editTool) Description() string {
	return "Edit a file by exact text replacement. Pass edits: [{oldText, newText}, ...], or a single oldText and newText. " +
		"Each oldText must match the file exactly (whitespace and indentation included, without read's line-number prefix) " +
		"and occur exactly once; add surrounding lines to make it unique. Edits apply in order, each to the result of the previous one; " +
		"if any edit fails, the file is left unchanged. In a file with CRLF line endings, oldText and newText may use plain newlines. " +
		fmt.Sprintf("Files over %d MiB are refused; change those with bash.", maxFileChange>>20)
}

func (editTool) Schema() json.RawMessage { return schemaOf(editFields) }

func (editTool) access() access { return accessWrite }

func (editTool) paths(a args) []string { p, _ := a.str("path"); return []string{p} }

// parse also checks that exactly one of the two forms is used.
func (editTool) parse(raw json.RawMessage) (args, error) {
	a, err := parseArgs(NameEdit, editFields, raw)
	if err != nil {
		return nil, err
	}
	_, hasEdits := a.list("edits")
	_, hasOld := a.str("oldText")
	_, hasNew := a.str("newText")
	switch {
	case hasEdits && (hasOld || hasNew):
		return nil, fmt.Errorf("invalid arguments for edit: pass either edits or oldText/newText, not both")
	case hasEdits:
		if l, _ := a.list("edits"); len(l) == 0 {
			return nil, fmt.Errorf("invalid arguments for edit: edits is empty")
		}
	case hasOld != hasNew:
		missing := "newText"
		if !hasOld {
			missing = "oldText"
		}
		return nil, fmt.Errorf("invalid arguments for edit: missing required field %q of the single-edit form", missing)
	case !hasOld:
		return nil, fmt.Errorf("invalid arguments for edit: missing edits (or oldText and newText)")
	}
	return a, nil
}

type replacement struct{ oldText, newText string }

func (t editTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	arg, _ := a.str("path")
	if arg == "" {
		return errorResult("invalid arguments for edit: path must not be empty")
	}
	var reps []replacement
	if list, ok := a.list("edits"); ok {
		for _, e := range list {
			o, _ := e.str("oldText")
			n, _ := e.str("newText")
			reps = append(reps, replacement{o, n})
		}
	} else {
		o, _ := a.str("oldText")
		n, _ := a.str("newText")
		reps = []replacement{{o, n}}
	}
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("edit %s: %v", arg, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return errorResult("edit %s: %v (use write to create a file)", display, plainErr(err))
	}
	if !fi.Mode().IsRegular() {
		return errorResult("edit %s: it is %s, not a regular file", display, fileKind(fi.Mode()))
	}
	if fi.Size() > maxFileChange {
		return editTooLarge(display, fi.Size())
	}
	// Binary files are told apart on disk; with a ClientFS the text to
	// edit is the editor's, unsaved changes included, and the result goes
	// back through it (clientfs.go).
	head, err := diskHead(abs)
	if err != nil {
		return errorResult("edit %s: %v", display, describeIOErr(err))
	}
	if isBinary(head) {
		return errorResult("edit %s: it is a binary file", display)
	}
	oldText, err := loadText(ctx, env, abs, maxFileChange)
	if err != nil {
		if ctx.Err() != nil {
			return errorResult("edit %s: %v", display, ctx.Err())
		}
		if errors.Is(err, errTooLarge) {
			return editTooLarge(display, -1)
		}
		return errorResult("edit %s: %v; no edit was applied", display, err)
	}
	newText, err := applyEdits(oldText, reps, display)
	if err != nil {
		return errorResult("%v", err)
	}
	if err := ctx.Err(); err != nil {
		return errorResult("edit %s: %v", display, err)
	}
	if err := storeText(ctx, env, abs, newText); err != nil {
		return errorResult("edit %s: %v", display, err)
	}
	fd := unifiedDiff(display, oldText, newText, false)
	details := changeDetails(abs, oldText, newText, fd)
	details["edits"] = len(reps)
	noun := "edit"
	if len(reps) > 1 {
		noun = "edits"
	}
	return textResult(fmt.Sprintf("Applied %d %s to %s (%s).", len(reps), noun, display, lineSummary(fd.changed)), details)
}

// editTooLarge refuses a file edit would have to hold in memory several
// times over; size is -1 when only the editor's copy was found too large.
func editTooLarge(display string, size int64) Result {
	is := fmt.Sprintf("is %d bytes", size)
	if size < 0 {
		is = "is too large"
	}
	return errorResult("edit %s: the file %s, more than the %d MiB edit handles. "+
		"Change it with bash instead (sed, or a script), or replace it whole with write; no edit was applied",
		display, is, maxFileChange>>20)
}

// applyEdits applies reps to text in order. Each oldText must occur exactly
// once in the text as the previous edits left it; in a CRLF file, text with
// plain newlines also matches, and the replacement gets CRLF too, so the
// file keeps one kind of line ending.
func applyEdits(text string, reps []replacement, display string) (string, error) {
	which := func(i int) string {
		if len(reps) == 1 {
			return "edit " + display
		}
		return fmt.Sprintf("edit %s: edit %d of %d", display, i+1, len(reps))
	}
	crlfFile := usesCRLF(text)
	for i, r := range reps {
		if r.oldText == "" {
			return "", fmt.Errorf("%s: oldText is empty; give the exact text to replace", which(i))
		}
		if r.oldText == r.newText {
			return "", fmt.Errorf("%s: oldText and newText are the same, so it changes nothing", which(i))
		}
		oldText, newText := r.oldText, r.newText
		n, overlap := occurrences(text, oldText)
		if n == 0 {
			// Lines copied from read with their numbers: match without them.
			if bare, ok := stripReadNumbers(oldText); ok {
				if c, o := occurrences(text, bare); c > 0 {
					oldText, n, overlap = bare, c, o
					if nb, ok := stripReadNumbers(newText); ok {
						newText = nb
					}
				}
			}
		}
		crlfMatch := false
		if n == 0 && strings.Contains(text, "\r\n") && !strings.Contains(oldText, "\r\n") {
			crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
			if c, o := occurrences(text, crlf); c > 0 {
				oldText, n, overlap, crlfMatch = crlf, c, o, true
			}
		}
		switch {
		case n == 0:
			hint := ""
			if i > 0 {
				hint = " (as the earlier edits left it)"
			}
			return "", fmt.Errorf("%s: oldText was not found in the file%s; it must match exactly, whitespace included. No edit was applied", which(i), hint)
		case overlap:
			return "", fmt.Errorf("%s: oldText occurs more than once in the file (the occurrences overlap); it must occur exactly once, so include more surrounding lines. No edit was applied", which(i))
		case n > 1:
			return "", fmt.Errorf("%s: oldText occurs %d times in the file; it must occur exactly once, so include more surrounding lines. No edit was applied", which(i), n)
		}
		if crlfFile || crlfMatch {
			newText = strings.ReplaceAll(strings.ReplaceAll(newText, "\r\n", "\n"), "\n", "\r\n")
		}
		text = strings.Replace(text, oldText, newText, 1)
	}
	return text, nil
}

// stripReadNumbers removes the "N\t" that read puts before each line,
// when every line of s has one; ok is false otherwise.
func stripReadNumbers(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i == len(lines)-1 && l == "" {
			break
		}
		j := 0
		for j < len(l) && l[j] >= '0' && l[j] <= '9' {
			j++
		}
		if j == 0 || j == len(l) || l[j] != '\t' {
			return "", false
		}
		lines[i] = l[j+1:]
	}
	return strings.Join(lines, "\n"), true
}

// occurrences counts the non-overlapping occurrences of s in text, and
// whether s occurs once more overlapping the first: "}\n}\n" is in
// "}\n}\n}\n" twice, though strings.Count says once.
func occurrences(text, s string) (n int, overlap bool) {
	n = strings.Count(text, s)
	if n == 1 {
		i := strings.Index(text, s)
		overlap = strings.Contains(text[i+1:], s)
	}
	return n, overlap
}

// usesCRLF reports whether most of text's line endings are CRLF.
func usesCRLF(text string) bool {
	crlf := strings.Count(text, "\r\n")
	return crlf > 0 && 2*crlf > strings.Count(text, "\n")
}

// lineSummary describes changed line numbers: "line 4", "lines 4-6, 10".
func lineSummary(lines []int) string {
	if len(lines) == 0 {
		return "no lines changed"
	}
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(lines[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lines[i], lines[j]))
		}
		i = j + 1
	}
	noun := "line "
	if len(lines) > 1 {
		noun = "lines "
	}
	if len(parts) > 8 {
		parts = append(parts[:8], "...")
	}
	return noun + strings.Join(parts, ", ")
}
