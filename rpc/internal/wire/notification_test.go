package wire

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"
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
