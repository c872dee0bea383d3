package wire

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// A Content-Length longer than its body swallows the start of the next
// frame, however few bytes ("C" of "Content-Length"): the broken frame is
// refused with -32700 and the next one is still answered. A whole request
// inside the broken frame gets its refusal under its own id.
func TestLSPLengthTooLongCostsOnlyItsOwnFrame(t *testing.T) {
	const next = `{"jsonrpc":"2.0","id":"next","method":"echo","params":["ok"]}`
	headers := map[string]func(string) string{
		"Content-Length first": lsp,
		"Content-Type first": func(body string) string {
			return "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		},
	}
	bodies := []struct {
		name, body, id string
	}{
		{"whole request", `{"jsonrpc":"2.0","id":"bad","method":"echo","params":["x"]}`, `"bad"`},
		{"whole request and a newline", `{"jsonrpc":"2.0","id":7,"method":"echo"}` + "\r\n", `7`},
		{"whole notification", `{"jsonrpc":"2.0","method":"echo"}`, `null`},
		{"broken JSON", `{"jsonrpc":"2.0","id":1,"method":"ec`, `null`},
	}
	for hname, frame := range headers {
		for _, b := range bodies {
			for extra := 1; extra <= len(frame(next)); extra++ {
				s := newServer(t, Options{Framing: LSP}, nil)
				s.send("Content-Length: " + strconv.Itoa(len(b.body)+extra) + "\r\n\r\n" + b.body + frame(next))
				// Broken JSON may cost two errors when the swallowed bytes
				// end inside Content-Type; never the next frame.
				for i := 0; ; i++ {
					got := s.readFrame(LSP)
					if strings.Contains(got, `"result"`) {
						if i == 0 {
							t.Fatalf("%s, %s, %d bytes too long: answered without refusing the broken frame", hname, b.name, extra)
						}
						if norm(t, got) != norm(t, `{"jsonrpc":"2.0","id":"next","result":["ok"]}`) {
							t.Fatalf("%s, %s, %d bytes too long: got %s", hname, b.name, extra, got)
						}
						break
					}
					id, code, dc := errorOf(t, got)
					if code != ParseError || dc != DataParseError {
						t.Fatalf("%s, %s, %d bytes too long: reply %s", hname, b.name, extra, got)
					}
					if i == 0 && id != b.id {
						t.Fatalf("%s, %s, %d bytes too long: refused with id %s, want %s", hname, b.name, extra, id, b.id)
					}
					if i > 0 && b.name != "broken JSON" || i > 1 {
						t.Fatalf("%s, %s, %d bytes too long: %d error replies", hname, b.name, extra, i+1)
					}
				}
			}
		}
	}
}

// A Content-Length above MaxContentLength is refused as soon as its header
// is read, without waiting for a body that cannot come, and the frames
// after it are read normally.
func TestLSPAbsurdContentLengthIsRefusedAtOnce(t *testing.T) {
	const next = `{"jsonrpc":"2.0","id":"next","method":"echo","params":["ok"]}`
	for _, n := range []int64{1000000000000, MaxContentLength + 1, 1<<63 - 1} {
		s := newServer(t, Options{Framing: LSP}, nil)
		s.send("Content-Length: " + strconv.FormatInt(n, 10) + "\r\n\r\n")
		got := s.readFrame(LSP)
		if id, code, dc := errorOf(t, got); id != "null" || code != ParseError || dc != DataParseError {
			t.Fatalf("Content-Length %d: reply %s", n, got)
		}
		if !strings.Contains(got, "larger than the limit of 1073741824 bytes") {
			t.Fatalf("Content-Length %d: the reply does not name the limit: %s", n, got)
		}
		s.send(`{"jsonrpc":"2.0","id":"lost","method":"echo"}` + lsp(next))
		s.expect(LSP, `{"jsonrpc":"2.0","id":"next","result":["ok"]}`)
	}
}

// FuzzLSPLengthTooLong: whatever a frame holds, a Content-Length longer than
// it by any amount up to the whole next frame costs that frame only; the
// next frame comes through. (A body that itself spells a header name could
// pass for the next header, so such bodies are left out.)
func FuzzLSPLengthTooLong(f *testing.F) {
	for _, seed := range []string{`{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"a":`, "", "\r\n", `{}C`, "garbage\n\n"} {
		for _, extra := range []uint8{1, 5, 14, 15, 16, 40} {
			f.Add([]byte(seed), extra)
		}
	}
	next := lsp(`{"jsonrpc":"2.0","id":424242,"method":"after"}`)
	f.Fuzz(func(t *testing.T, body []byte, extra uint8) {
		low := bytes.ToLower(body)
		if bytes.Contains(low, []byte("content-")) {
			t.Skip()
		}
		k := 1 + int(extra)%len(next)
		in := "Content-Length: " + strconv.Itoa(len(body)+k) + "\r\n\r\n" + string(body) + next
		r := newFrameReader(strings.NewReader(in), LSP, func(Framing) {})
		for i := 0; ; i++ {
			if i > len(in)+16 {
				t.Fatal("no progress")
			}
			b, err := r.next()
			r.takeErrs()
			misframed := r.takeMisframed() != ""
			if b != nil && bytes.Contains(b, []byte("424242")) {
				if misframed {
					t.Fatalf("the next frame was refused: %q", b)
				}
				if vd := classify(b); vd.reject != nil {
					t.Fatalf("the next frame was rejected: %s", vd.reject.message)
				}
				return
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatal(err)
				}
				t.Fatalf("input %q: the next frame never came through", in)
			}
		}
	})
}

// A long LSP body is read into room that doubles, then takes its length, not
// grown a quarter at a time: a 50 MB prompt's body was copied some twenty
// times on its way in, a buffer and the next alive at once
// (docs/performance.md, "One large prompt").
func TestALongLSPBodyIsReadIntoRoomThatDoubles(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"` + strings.Repeat(`pasted \"text\"\n`, (4<<20)/16) + `"}}`
	frame := "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	fr := newFrameReader(strings.NewReader(frame), LSP, func(Framing) {})
	var got []byte
	var err error
	n := allocatedBy(func() { got, err = fr.next() })
	if err != nil || string(got) != body {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	t.Logf("%.2f× the body", float64(n)/float64(len(body)))
	if limit := uint64(len(body)) * 5 / 2; n > limit {
		t.Errorf("reading a body of %d bytes allocated %d bytes, want at most %d", len(body), n, limit)
	}
}
