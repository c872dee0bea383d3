package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// sniffLen is how much of a file decides whether it is text.
const sniffLen = 8 << 10

// isBinary reports whether head (a file's first bytes) looks like binary
// data: a NUL byte, or bytes that are not UTF-8 (a rune cut off by the end
// of head is fine).
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	for len(head) > 0 {
		r, size := utf8.DecodeRune(head)
		if r == utf8.RuneError && size <= 1 {
			if len(head) < utf8.UTFMax && !utf8.FullRune(head) {
				return false
			}
			return true
		}
		head = head[size:]
	}
	return false
}

// readHead returns up to n bytes from the start of f and rewinds it.
func readHead(f *os.File, n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return buf[:k], nil
}

// writeFileAtomic replaces path's content: a temp file in the same
// directory, written, synced and renamed over path, so readers see the old
// or the new file, never a torn one. The file keeps its mode (new files get
// 0644). A symlink at path is written through: its target is replaced, not
// the link.
func writeFileAtomic(path string, data []byte) error {
	// Resolving links also covers a dangling one: its target is created,
	// as open(2) would, and that target is what Decide checked.
	real, err := realPath(path)
	if err != nil {
		return err
	}
	path = real
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create parent directories: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".loop-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write temp file: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("chmod temp file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temp file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temp file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename temp file into place: %w", err)
	}
	done = true
	return nil
}

// fileKind names what a non-regular file is, for error messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}
