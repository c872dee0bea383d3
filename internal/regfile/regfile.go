// Package regfile reads files that must be regular files of bounded size:
// what Loop reads whole from a path someone else chose (a session file to
// import, a trace segment to replay). A FIFO would block the read forever,
// a device (/dev/zero) or a file that grows while it is read would exhaust
// memory; both are refused before anything is read.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads path whole. It must be a regular file (a symbolic link to
// one is followed) of at most limit bytes, also once read. O_NONBLOCK
// keeps the open itself from waiting for a FIFO's writer; it changes
// nothing for a regular file. The errors it makes do not repeat the path:
// the caller names it once.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", fi.Size(), limit)
	}
	// Sized as os.ReadFile sizes it, so that the file is held once; a
	// file that grows meanwhile is read on, up to the bound.
	data := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(f, data)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		data = data[:n]
	case err != nil:
		return nil, err
	default:
		rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
		if err != nil {
			return nil, err
		}
		data = append(data, rest...)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("grew past the %d bytes allowed while it was read", limit)
	}
	return data, nil
}
