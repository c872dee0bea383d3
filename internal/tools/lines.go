package tools

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// lineChunk is the line reader's buffer, and how often it checks for
// cancellation: a file of one endless line (a sparse file, a log without
// newlines) is read chunk by chunk, so a stopped run does not wait for it.
const lineChunk = 64 << 10

// lineReader reads a file line by line, keeping a bounded head of each line,
// and gives up with ctx's error once ctx is done.
type lineReader struct {
	ctx       context.Context
	r         *bufio.Reader
	consumed  int64 // bytes read so far
	unchecked int   // bytes read since ctx was last checked
	stopAt    int64 // when above 0, next gives up with errScanStop once consumed reaches it
}

// errScanStop is next's error when the reader's stopAt was reached.
var errScanStop = errors.New("scan limit reached")

func newLineReader(ctx context.Context, r io.Reader) *lineReader {
	return &lineReader{ctx: ctx, r: bufio.NewReaderSize(r, lineChunk), unchecked: lineChunk}
}

// next reads one line, keeping at most keep bytes of it; full is the line's
// whole length without its "\n". At end of file it returns io.EOF, with the
// last line if it had no newline. It returns ctx's error once ctx is done,
// and errScanStop with the line so far once stopAt is reached.
func (l *lineReader) next(keep int) (line string, full int, err error) {
	var b []byte
	for {
		if l.unchecked >= lineChunk {
			l.unchecked = 0
			if err := l.ctx.Err(); err != nil {
				return "", full, err
			}
		}
		if l.stopAt > 0 && l.consumed >= l.stopAt {
			if _, err := l.r.Peek(1); err == nil { // not at the end after all
				return string(b), full, errScanStop
			}
		}
		chunk, err := l.r.ReadSlice('\n')
		l.unchecked += len(chunk)
		l.consumed += int64(len(chunk))
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		full += len(chunk)
		if room := keep - len(b); room > 0 {
			b = append(b, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return string(b), full, err
	}
}
