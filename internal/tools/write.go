package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// maxDetailText bounds the old and new text that write and edit put into
// Details next to the diff (for ACP diff content); bigger files get the diff only.
const maxDetailText = 256 << 10

// maxFileChange is the largest file write diffs and edit changes: both hold
// it in memory several times over (old and new text, lines, the diff).
const maxFileChange = 8 << 20

var writeFields = []field{
	{name: "path", typ: "string", required: true, desc: "File to write, relative to the working directory (or absolute)."},
	{name: "content", typ: "string", required: true, desc: "The complete new content of the file."},
}

type writeTool struct{}

func (writeTool) Name() string { return NameWrite }

func (writeTool) Description() string {
	return "Write a file with the given content, replacing it if it exists and creating missing parent directories. " +
		"The replacement is atomic (a temp file renamed into place) and keeps the file's permissions. " +
		"Prefer edit for changes to an existing file; use write for new files or complete rewrites."
}

func (writeTool) Schema() json.RawMessage { return schemaOf(writeFields) }

func (writeTool) access() access { return accessWrite }

func (writeTool) parse(raw json.RawMessage) (args, error) {
	return parseArgs(NameWrite, writeFields, raw)
}

func (writeTool) paths(a args) []string { p, _ := a.str("path"); return []string{p} }

func (t writeTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	arg, _ := a.str("path")
	content, _ := a.str("content")
	if arg == "" {
		return errorResult("invalid arguments for write: path must not be empty")
	}
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("write %s: %v", arg, err)
	}
	if err := ctx.Err(); err != nil {
		return errorResult("write %s: %v", display, err)
	}
	fi, err := os.Stat(abs)
	created := errors.Is(err, fs.ErrNotExist)
	if err != nil && !created {
		return errorResult("write %s: %v", display, describeIOErr(err))
	}
	if !created && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return errorResult("write %s: it is a directory", display)
		}
		return errorResult("write %s: it is %s, not a regular file", display, fileKind(fi.Mode()))
	}
	// The old content only feeds the diff: a binary or huge file is not
	// read, and gets none.
	var old string
	binaryOld, largeOld := false, false
	if !created {
		head, err := diskHead(abs)
		if err != nil {
			return errorResult("write %s: %v", display, describeIOErr(err))
		}
		binaryOld = isBinary(head)
		largeOld = !binaryOld && fi.Size() > maxFileChange
		if !binaryOld && !largeOld {
			old, err = readDiffSide(ctx, env, abs)
			largeOld = errors.Is(err, errTooLarge)
			if err != nil && !largeOld {
				return errorResult("write %s: %v", display, err)
			}
		}
	}
	if err := storeText(ctx, env, abs, content); err != nil {
		return errorResult("write %s: %v", display, err)
	}
	var fd fileDiff
	skipped := "" // why there is no diff
	switch {
	case binaryOld:
		skipped = "the old file is binary"
		fd.text = fmt.Sprintf("Binary file %s replaced by text (%d bytes)\n", display, len(content))
	case largeOld:
		skipped = fmt.Sprintf("the old file is over %d MiB", maxFileChange>>20)
		fd.text = fmt.Sprintf("File %s replaced by %d bytes; not diffed, as %s\n", display, len(content), skipped)
	default:
		fd = unifiedDiff(display, old, content, created)
	}
	details := changeDetails(abs, old, content, fd)
	if skipped != "" {
		// Without the old side, oldText and newText would claim a change
		// from an empty file.
		delete(details, "oldText")
		delete(details, "newText")
		details["diffSkipped"] = skipped
	}
	details["bytes"] = len(content)
	details["created"] = created
	verb := "Overwrote"
	if created {
		verb = "Created"
	}
	text := fmt.Sprintf("%s %s (%d bytes).", verb, display, len(content))
	switch {
	case binaryOld:
		text = fmt.Sprintf("Overwrote binary file %s with text (%d bytes).", display, len(content))
	case largeOld:
		text = fmt.Sprintf("Overwrote %s (%d bytes); the old file was over %d MiB, too large to diff.", display, len(content), maxFileChange>>20)
	case !created && fd.text == "":
		text = fmt.Sprintf("Wrote %s (%d bytes); the content was already the same.", display, len(content))
	}
	return textResult(text, details)
}

// readDiffSide returns the old side of write's diff: the editor's buffer
// when it has one, else the saved copy (if the editor cannot say, the saved
// copy is shown; it only feeds the diff). Content over maxFileChange fails
// with errTooLarge.
func readDiffSide(ctx context.Context, env Env, abs string) (string, error) {
	if env.FS != nil {
		text, err := env.FS.ReadTextFile(ctx, abs)
		switch {
		case err == nil && len(text) > maxFileChange:
			return "", errTooLarge
		case err == nil:
			return text, nil
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
	}
	return loadText(ctx, Env{}, abs, maxFileChange)
}

// changeDetails is the Details of a file change: the path, a unified diff
// (cut past maxDetailText), the changed lines of the new text, and old and
// new text when both are small text.
func changeDetails(abs, oldText, newText string, fd fileDiff) map[string]any {
	d := map[string]any{"path": abs, "diff": fd.text, "changedLines": fd.changed, "line": 1}
	if len(fd.changed) > 0 {
		d["line"] = fd.changed[0]
	}
	if len(fd.text) > maxDetailText {
		cut := strings.LastIndexByte(fd.text[:maxDetailText], '\n') + 1
		d["diff"] = fd.text[:cut] + fmt.Sprintf("[diff cut: %d bytes in all]\n", len(fd.text))
		d["diffTruncated"] = true
	}
	if len(oldText) <= maxDetailText && len(newText) <= maxDetailText {
		d["oldText"] = oldText
		d["newText"] = newText
	}
	return d
}

// describeIOErr names an I/O error without its *PathError wrapper and
// explains the common case of a directory in the way.
func describeIOErr(err error) error {
	if errors.Is(err, syscall.EISDIR) {
		return errors.New("it is a directory")
	}
	return plainErr(err)
}
