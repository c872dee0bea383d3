package trace

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/redact"
)

// discardFS makes the directories but takes every write and keeps
// nothing: what a record costs in memory, without the disk.
type discardFS struct{ osFS }

func (discardFS) OpenFile(string, int, os.FileMode) (io.WriteCloser, error) {
	return nopWriteCloser{}, nil
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// BenchmarkStreamRead: what one read of a stream costs its trace, the
// record of its event included (made once per call, as at its end).
func BenchmarkStreamRead(b *testing.B) {
	secrets := redact.New("sk-proj-" + strings.Repeat("Xq7vN2bK9mTz", 13))
	w := NewWriter(Options{Dir: filepath.Join(b.TempDir(), "t"), FS: discardFS{}, Secrets: func() *redact.Set { return secrets }})
	defer w.Close()
	ev := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word12 \"}}]}\n\n")
	c := w.StartCall(Record{Purpose: PurposeMain})
	for i := 0; b.Loop(); i++ {
		c.Body(1, ev)
		if i%100 == 99 {
			c.Finish(Record{})
			c = w.StartCall(Record{Purpose: PurposeMain})
		}
	}
}
