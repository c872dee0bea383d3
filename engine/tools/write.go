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
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return errorResult("write %s: it is a directory", display)
		}
		return errorResult("write %s: it is %s, not a regular file", display, fileKind(fi.Mode()))
	}
	old, err := os.ReadFile(abs)
	created := errors.Is(err, fs.ErrNotExist)
	if err != nil && !created {
		return errorResult("write %s: %v", display, describeIOErr(err))
	}
	if env.FS != nil && !created && !isBinary(old[:min(len(old), sniffLen)]) {
		// The diff's old side is what the write replaces: the editor's
		// buffer when it has one. If the editor cannot say, the saved copy
		// is shown; it only feeds the diff.
		if text, err := env.FS.ReadTextFile(ctx, abs); err == nil {
			old = []byte(text)
		} else if ctx.Err() != nil {
			return errorResult("write %s: %v", display, ctx.Err())
		}
	}
	if err := storeText(ctx, env, abs, content); err != nil {
		return errorResult("write %s: %v", display, err)
	}
	var fd fileDiff
	binaryOld := isBinary(old[:min(len(old), sniffLen)])
	if binaryOld {
		old = nil // a binary file's bytes make no readable diff
		fd.text = fmt.Sprintf("Binary file %s replaced by text (%d bytes)\n", display, len(content))
	} else {
		fd = unifiedDiff(display, string(old), content, created)
	}
	details := changeDetails(abs, string(old), content, fd)
	if binaryOld {
		delete(details, "oldText")
		delete(details, "newText")
	}
	details["bytes"] = len(content)
	details["created"] = created
	verb := "Overwrote"
	if created {
		verb = "Created"
	}
	text := fmt.Sprintf("%s %s (%d bytes).", verb, display, len(content))
	if binaryOld {
		text = fmt.Sprintf("Overwrote binary file %s with text (%d bytes).", display, len(content))
	} else if !created && fd.text == "" {
		text = fmt.Sprintf("Wrote %s (%d bytes); the content was already the same.", display, len(content))
	}
	return textResult(text, details)
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
