package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrNotServed is what a ClientFS returns for an operation its front end
// does not serve (ACP clients advertise reads and writes separately): the
// tool then uses the disk, as it does without a ClientFS.
var ErrNotServed = errors.New("the front end does not serve this file operation")

// How read, write and edit use a ClientFS. Loop's permission checks (Decide,
// and the containment check in Env.target) have already run when these are
// called: the client only ever sees paths the preset allows.
//
// The client serves text only: ACP's fs methods carry strings, and an
// editor's buffer is text. So whether a file is a directory, a special file,
// an image or binary is still decided from the disk, and images are read
// from it; a file the editor has open is a text file on disk too.

// diskHead returns up to sniffLen bytes from the start of the file on
// disk, for the binary check.
func diskHead(abs string) ([]byte, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, sniffLen)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return buf[:n], nil
}

// errTooLarge is loadText's error for a file over its size limit.
var errTooLarge = errors.New("file too large")

// loadText returns a text file's content as the front end has it (unsaved
// changes included), or from the disk when there is no ClientFS or it does
// not serve reads. Errors of the client are returned as they are: edit must
// not fall back to the disk, or it would write the saved copy over the
// editor's unsaved changes. Content over max bytes is not loaded: it fails
// with errTooLarge.
func loadText(ctx context.Context, env Env, abs string, max int64) (string, error) {
	if env.FS != nil {
		text, err := env.FS.ReadTextFile(ctx, abs)
		if err == nil {
			if int64(len(text)) > max {
				return "", errTooLarge
			}
			return text, nil
		}
		if !errors.Is(err, ErrNotServed) {
			return "", fmt.Errorf("the editor could not read it: %w", err)
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", describeIOErr(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", describeIOErr(err)
	}
	if int64(len(b)) > max {
		return "", errTooLarge
	}
	return string(b), nil
}

// storeText writes content to abs: through the front end when it serves
// writes (the editor updates its buffer, and saves as it does), else
// atomically on disk. Missing parent directories are made on disk either
// way, as write's description promises; not every editor makes them.
func storeText(ctx context.Context, env Env, abs, content string) error {
	if env.FS != nil {
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return fmt.Errorf("create parent directories: %w", plainErr(err))
		}
		err := env.FS.WriteTextFile(ctx, abs, content)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrNotServed) {
			return fmt.Errorf("the editor refused the write: %w", err)
		}
	}
	if err := writeFileAtomic(abs, []byte(content)); err != nil {
		return plainErr(err)
	}
	return nil
}
