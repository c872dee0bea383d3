package wire

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
)

// gatedParams encodes only once the test lets it, and says when asked.
type gatedParams struct{ asked, release chan struct{} }

func (g gatedParams) MarshalJSON() ([]byte, error) {
	close(g.asked)
	<-g.release
	return []byte(`{"big":true}`), nil
}

// A Notification is queued as a value: WriteObject returns without
// encoding it (the engine delivers events under a session's lock, and a
// session/state may hold a long history), the writer encodes it in its
// turn, and it never merges with the deltas behind it.
func TestNotificationIsEncodedByTheWriter(t *testing.T) {
	inR, _ := io.Pipe()
	outR, outW := io.Pipe()
	s := New(inR, outW, Options{Framing: NDJSON, Merger: mergeDeltas})
	conn := quietConn(s, nil)
	defer conn.Close()
	p := gatedParams{asked: make(chan struct{}), release: make(chan struct{})}
	delta := func(d string) deltaParams { return deltaParams{"s1", "m1", "delta", 0, "text", d} }
	within(t, "WriteObject of a Notification", func() {
		if err := s.WriteObject(&Notification{Method: "session/state", Params: p}); err != nil {
			t.Error(err)
		}
		// Behind it while the writer encodes it: neither may merge into it.
		if err := s.WriteObject(&Notification{Method: deltaMethod, Params: delta("a")}); err != nil {
			t.Error(err)
		}
		if err := conn.Notify(context.Background(), deltaMethod, delta("b")); err != nil {
			t.Error(err)
		}
		if err := s.WriteObject(&Notification{Method: "bare"}); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-p.asked:
	case <-time.After(60 * time.Second):
		t.Fatal("the writer never encoded the notification")
	}
	close(p.release)
	br := bufio.NewReader(outR)
	want := []string{
		`{"jsonrpc":"2.0","method":"session/state","params":{"big":true}}`,
		`{"jsonrpc":"2.0","method":"session/message","params":{"sessionId":"s1","messageId":"m1","event":"delta","block":0,"type":"text","delta":"a"}}`,
		`{"jsonrpc":"2.0","method":"session/message","params":{"sessionId":"s1","messageId":"m1","event":"delta","block":0,"type":"text","delta":"b"}}`,
		`{"jsonrpc":"2.0","method":"bare"}`,
	}
	for _, w := range want {
		var got string
		within(t, "reading output", func() {
			var err error
			got, err = readFrame(br, NDJSON)
			if err != nil {
				t.Error(err)
			}
		})
		if got != w {
			t.Fatalf("got  %s\nwant %s", got, w)
		}
	}
}

// hashingWriter keeps a digest of what it is written and says when the
// output reached want bytes.
type hashingWriter struct {
	h    hash.Hash
	n    int
	want int
	done chan struct{}
}

func (w *hashingWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	if w.n += len(p); w.n >= w.want && w.done != nil {
		close(w.done)
		w.done = nil
	}
	return len(p), nil
}

// A long notification (a session/state of a long history, the end of a
// 12 MB prompt's message) is encoded straight into the output in both
// framings: json.Marshal built it whole in a buffer grown a quarter at a
// time and copied it out, and the envelope copied it again, some seven
// times its size in all. (Up to bufferedParams, params are encoded into a
// buffer first: one copy.) A notification of a few MB (a session/state of
// 10,000 messages) is streamed too: encoded into a growing buffer it cost
// three times its size on every prompt.
func TestALongNotificationIsWrittenAsItIsEncoded(t *testing.T) {
	for _, lines := range []int{40000, 240000} { // 2.2 MB and 13 MB as JSON
		t.Run(fmt.Sprint(lines), func(t *testing.T) { testALongNotificationIsWrittenAsItIsEncoded(t, lines) })
	}
}

func testALongNotificationIsWrittenAsItIsEncoded(t *testing.T, lines int) {
	text := strings.Repeat("a pasted line with \"quotes\" and a \\ backslash <&>\n", lines)
	params := map[string]any{"sessionId": "s1", "message": map[string]any{"role": "user", "content": []any{map[string]string{"type": "text", "text": text}}}}
	encoded, err := jsonenc.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","method":"session/message","params":` + string(encoded) + `}`
	for _, f := range []Framing{NDJSON, LSP} {
		want := body + "\n"
		if f == LSP {
			want = lsp(body)
		}
		sum := sha256.Sum256([]byte(want))
		out := &hashingWriter{h: sha256.New(), want: len(want), done: make(chan struct{})}
		done := out.done
		s := New(strings.NewReader(""), out, Options{Framing: f})
		n := allocatedBy(func() {
			if err := s.WriteObject(&Notification{Method: "session/message", Params: params}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the notification was not written")
			}
		})
		if out.n != len(want) || [32]byte(out.h.Sum(nil)) != sum {
			t.Errorf("%v: wrote %d bytes, want %d bytes of the same encoding", f, out.n, len(want))
		}
		if limit := uint64(len(text) / 2); n > limit {
			t.Errorf("%v: writing a %d-byte notification allocated %d bytes, want at most %d", f, len(want), n, limit)
		}
		s.Close()
	}
}

// Params a little longer than bufferedParams are found too long only once
// the buffer has grown past it; that room is kept, so a run of them (the
// session/state of a 1,000-message history on every prompt) grows no
// buffer after the first.
func TestNotificationsJustPastTheBufferReuseItsRoom(t *testing.T) {
	line := strings.Repeat("x", 100)
	params := map[string][]string{"messages": slices.Repeat([]string{line}, (bufferedParams+bufferedParams/8)/len(line))}
	w := newFrameWriter(io.Discard, NDJSON)
	write := func() {
		if _, werr, err := w.writeNotification("session/state", params); werr != nil || err != nil {
			t.Fatal(werr, err)
		}
	}
	write()
	if n := allocatedBy(write); n > bufferedParams/2 {
		t.Errorf("a second notification of %d messages allocated %d bytes, want at most %d", len(params["messages"]), n, bufferedParams/2)
	}
}
