package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/loopdev/loop/convo"
)

// Caps of one read call.
const (
	readMaxLines     = 2000
	readMaxBytes     = 256 << 10
	readMaxLineBytes = 4 << 10
)

// readScanAhead bounds how far read scans past what it returns: to count
// the lines left, or to find the end of a long line.
const readScanAhead = 4 << 20

// readMaxImage is the largest image read returns, in bytes as stored: its
// base64 stays under 5,000,000 bytes. Anthropic refuses a request with an
// image over 5 MiB of base64, and an image in the history would then fail
// every later request of the session.
const readMaxImage = (5_000_000 - 1) / 4 * 3

var readFields = []field{
	{name: "path", typ: "string", required: true, desc: "File to read, relative to the working directory (or absolute)."},
	{name: "offset", typ: "integer", desc: "1-based line number to start at (default 1)."},
	{name: "limit", typ: "integer", desc: fmt.Sprintf("Maximum number of lines to return (default and maximum %d).", readMaxLines)},
}

type readTool struct{}

func (readTool) Name() string { return NameRead }

func (readTool) Description() string {
	return fmt.Sprintf(`Read a file. Each line comes back as its line number, a tab, and the line; the number and tab are not part of the file, so leave them out of edit's oldText. One call returns at most %d lines or %d KiB, whichever comes first; a note at the end gives the offset to continue from. Lines longer than %d bytes are cut, with a note. PNG, JPEG, GIF and WebP images up to %.2f MB come back as images. Other binary files are refused. Use ls for directories.`,
		readMaxLines, readMaxBytes>>10, readMaxLineBytes, float64(readMaxImage)/1e6)
}

func (readTool) Schema() json.RawMessage { return schemaOf(readFields) }

func (readTool) access() access { return accessRead }

func (readTool) parse(raw json.RawMessage) (args, error) { return parseArgs(NameRead, readFields, raw) }

func (readTool) paths(a args) []string { p, _ := a.str("path"); return []string{p} }

func (t readTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	arg, _ := a.str("path")
	if arg == "" {
		return errorResult("invalid arguments for read: path must not be empty")
	}
	offset, hasOffset := a.integer("offset")
	if !hasOffset {
		offset = 1
	}
	if offset < 1 {
		return errorResult("invalid arguments for read: offset must be 1 or more (the first line is 1), got %d", offset)
	}
	limit, hasLimit := a.integer("limit")
	if !hasLimit || limit > readMaxLines {
		limit = readMaxLines
	}
	if limit < 1 {
		return errorResult("invalid arguments for read: limit must be 1 or more, got %d", limit)
	}
	if strings.HasPrefix(arg, ToolOutputPrefix) && env.ToolOutput != nil {
		// The whole output of an earlier call, kept in the session's
		// history: no file, so nothing to confine.
		text, ok := env.ToolOutput(arg)
		if !ok {
			return errorResult("read %s: no tool output of this session has that name", arg)
		}
		return readText(ctx, strings.NewReader(text), arg, offset, limit, map[string]any{"path": arg})
	}
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("read %s: %v", arg, err)
	}
	// Stat before opening: opening a FIFO would block until a writer comes.
	fi, statErr := os.Stat(abs)
	// With a ClientFS, a file missing on disk may still be open in the
	// editor (deleted behind its back): ask it before giving up.
	if statErr != nil && (env.FS == nil || !errors.Is(statErr, fs.ErrNotExist)) {
		return errorResult("read %s: %v", display, plainErr(statErr))
	}
	details := map[string]any{"path": abs}
	var disk *os.File
	if statErr == nil {
		if fi.IsDir() {
			return errorResult("read %s: it is a directory; use ls to list it", display)
		}
		if !fi.Mode().IsRegular() {
			return errorResult("read %s: it is %s, not a regular file", display, fileKind(fi.Mode()))
		}
		f, err := os.Open(abs)
		if err != nil {
			return errorResult("read %s: %v", display, plainErr(err))
		}
		defer f.Close()
		head, err := readHead(f, sniffLen)
		if err != nil {
			return errorResult("read %s: %v", display, plainErr(err))
		}
		// Images and binary files come from the disk even with a ClientFS:
		// the client serves text only (see clientfs.go).
		if mime := imageType(head); mime != "" {
			return readImage(f, fi.Size(), display, mime, details)
		}
		if isBinary(head) {
			return errorResult("read %s: it is a binary file (%d bytes); read shows text and images only", display, fi.Size())
		}
		disk = f
	}
	if env.FS == nil {
		return readText(ctx, disk, display, offset, limit, details)
	}
	return readFromClient(ctx, env.FS, abs, display, offset, limit, details, disk)
}

// readFromClient reads a text file as the editor has it, unsaved changes
// included. When the editor cannot serve it but the disk can (an editor may
// refuse files outside its project, say), the model reads the saved copy,
// with a note saying so: a read that fails helps less than the last saved
// content. disk is nil when the file is not on disk.
func readFromClient(ctx context.Context, cfs ClientFS, abs, display string, offset, limit int, details map[string]any, disk *os.File) Result {
	text, err := cfs.ReadTextFile(ctx, abs)
	if err == nil {
		details["source"] = "editor"
		return readText(ctx, strings.NewReader(text), display, offset, limit, details)
	}
	if ctx.Err() != nil {
		return errorResult("read %s: %v", display, ctx.Err())
	}
	if disk == nil {
		return errorResult("read %s: no such file on disk, and the editor could not read it: %v", display, err)
	}
	if errors.Is(err, ErrNotServed) {
		return readText(ctx, disk, display, offset, limit, details)
	}
	details["source"] = "disk"
	details["clientError"] = err.Error()
	res := readText(ctx, disk, display, offset, limit, details)
	if !res.IsError {
		res.Content[0].Text += fmt.Sprintf("[The editor could not serve this file (%v); this is the copy saved on disk, without any unsaved changes.]\n", err)
	}
	return res
}

// imageType names the image format by its magic bytes, or "".
func imageType(head []byte) string {
	h := string(head)
	switch {
	case strings.HasPrefix(h, "\x89PNG\r\n\x1a\n"):
		return "image/png"
	case strings.HasPrefix(h, "\xff\xd8\xff"):
		return "image/jpeg"
	case strings.HasPrefix(h, "GIF87a"), strings.HasPrefix(h, "GIF89a"):
		return "image/gif"
	case len(h) >= 12 && h[:4] == "RIFF" && h[8:12] == "WEBP":
		return "image/webp"
	}
	return ""
}

func readImage(f *os.File, size int64, display, mime string, details map[string]any) Result {
	if size > readMaxImage {
		return imageTooLarge(display, mime, size)
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxImage+1))
	if err != nil {
		return errorResult("read %s: %v", display, plainErr(err))
	}
	if len(data) > readMaxImage { // grew since the stat
		return imageTooLarge(display, mime, int64(len(data)))
	}
	details["mimeType"] = mime
	details["bytes"] = len(data)
	return Result{
		Content: []convo.Block{
			{Type: convo.BlockText, Text: fmt.Sprintf("Read image %s (%s, %d bytes).", display, mime, len(data))},
			{Type: convo.BlockImage, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)},
		},
		Details: details,
	}
}

// imageTooLarge tells the model how to get an image it can read.
func imageTooLarge(display, mime string, size int64) Result {
	return errorResult("read %s: the %s image is too large: %d bytes, and read returns images of at most %d bytes (%.2f MB), "+
		"since models refuse bigger ones. Read a smaller image, or make a smaller copy with bash and read that, "+
		"e.g. `convert %s -resize 50%% /tmp/smaller.png` (ImageMagick) or `ffmpeg -i %s -vf scale=iw/2:-1 /tmp/smaller.png`.",
		display, mime, size, readMaxImage, float64(readMaxImage)/1e6, shellQuote(display), shellQuote(display))
}

// shellQuote quotes s for a POSIX shell, for commands suggested to the model.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// readText numbers lines offset..offset+limit-1 within the byte cap. It
// reads what it returns, and at most readScanAhead bytes more: enough to
// count the rest of most files for the note, and to find the end of a long
// line it shows. Past that it only says that the file goes on, so reading
// the head of a huge file costs what it returns.
func readText(ctx context.Context, f io.Reader, display string, offset, limit int, details map[string]any) Result {
	lr := newLineReader(ctx, f)
	var out strings.Builder
	lineNo, last := 0, 0
	cutLines := 0
	stoppedBy := ""    // why output ended before the file did
	uncounted := false // the file goes on past what was counted
	for {
		if stoppedBy == "" && lineNo+1 >= offset {
			lr.stopAt = lr.consumed + readScanAhead // this line is shown
		}
		line, full, err := lr.next(readMaxLineBytes)
		if errors.Is(err, errScanStop) {
			uncounted = true
			if stoppedBy == "" { // a shown line whose end is too far away
				lineNo++
				entry := fmt.Sprintf("%d\t%s ... [line cut: more than %d MiB]\n", lineNo, strings.ToValidUTF8(strings.TrimSuffix(line, "\r"), ""), readScanAhead>>20)
				stoppedBy = "long line"
				if out.Len()+len(entry) <= readMaxBytes || out.Len() == 0 {
					out.WriteString(entry)
					last = lineNo
					cutLines++
				}
			}
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return errorResult("read %s: %v", display, plainErr(err))
		}
		if errors.Is(err, io.EOF) && full == 0 {
			break // no last line without a newline
		}
		lineNo++
		if lineNo >= offset && stoppedBy == "" {
			text := strings.TrimSuffix(line, "\r")
			if full > readMaxLineBytes {
				text = strings.ToValidUTF8(text, "") + fmt.Sprintf(" ... [line cut: %d bytes in all]", full)
				cutLines++
			}
			entry := fmt.Sprintf("%d\t%s\n", lineNo, text)
			switch {
			case lineNo-offset >= limit:
				stoppedBy = "limit"
			case out.Len()+len(entry) > readMaxBytes && out.Len() > 0:
				stoppedBy = "size"
			default:
				out.WriteString(entry)
				last = lineNo
			}
			if stoppedBy != "" {
				lr.stopAt = lr.consumed + readScanAhead // count what follows
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	total := lineNo
	if !uncounted {
		details["totalLines"] = total
	}
	if total == 0 {
		details["line"] = 1
		return textResult(fmt.Sprintf("%s is empty.", display), details)
	}
	if offset > total {
		return errorResult("read %s: offset %d is past the end of the file, which has %d lines", display, offset, total)
	}
	details["line"] = offset
	details["lines"] = []int{offset, last}
	details["truncated"] = last < total || uncounted
	text := out.String()
	switch {
	case stoppedBy == "long line":
		text += fmt.Sprintf("\n[Showing lines %d-%d; line %d is longer than %d MiB, so read stops there. Call read with offset=%d for the lines after it, or use bash to look into it.]\n", offset, last, lineNo, readScanAhead>>20, lineNo+1)
	case last < total:
		why := fmt.Sprintf("the %d-line limit", limit)
		if stoppedBy == "size" {
			why = fmt.Sprintf("the %d KiB cap", readMaxBytes>>10)
		}
		of := fmt.Sprintf(" of %d", total)
		if uncounted {
			of = ", and more lines follow"
		}
		text += fmt.Sprintf("\n[Showing lines %d-%d%s (stopped at %s). Call read with offset=%d to continue.]\n", offset, last, of, why, last+1)
	}
	if cutLines > 0 {
		text += fmt.Sprintf("[%d long line(s) were cut at %d bytes; use grep or bash to see them whole.]\n", cutLines, readMaxLineBytes)
	}
	return textResult(text, details)
}

// plainErr drops the *PathError wrapper, whose absolute path the message
// already names in the workspace's terms.
func plainErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
