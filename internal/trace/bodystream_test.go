package trace

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// longChat is a chat request whose history holds a long pasted text.
func longChat(text string, turns int, extra string) map[string]any {
	msgs := []map[string]string{{"role": "user", "content": text}}
	for i := range turns {
		msgs = append(msgs, map[string]string{"role": "assistant", "content": fmt.Sprintf("turn %d%s", i, extra)})
	}
	return map[string]any{"model": "m1", "stream": true, "messages": msgs}
}

// A long body recorded from its pieces makes the lines its bytes make:
// whole as the first of its purpose and after a short one, patched after
// a long one, scrubbed whole when it holds a secret; and the bodies read
// back are the bytes sent.
func TestALongBodyTracedFromItsPiecesIsTheLineItsBytesMake(t *testing.T) {
	const secret = "sk-secret-0123456789abcdef"
	text := strings.Repeat("func main() { fmt.Println(\"a \\\"quoted\\\" wörd\") } // 中文\n", (2<<20)/60)
	cases := map[string][]any{
		"the first of its purpose":    {longChat(text, 0, "")},
		"after a short body":          {map[string]any{"model": "m1", "messages": []string{"hi"}}, longChat(text, 0, "")},
		"after a long body":           {longChat(text, 0, ""), longChat(text, 1, ""), longChat(text, 2, "")},
		"shorter than the one before": {longChat(text, 2, ""), longChat(text, 1, "")},
		"changed in the middle":       {longChat(text, 0, ""), longChat(text[:len(text)/3]+"中"+text[len(text)/3:], 0, "")},
		"changed at the start":        {longChat(text, 0, ""), longChat("ü"+text, 0, "")},
		"holding a secret":            {longChat(text, 0, " "+secret), longChat(text, 1, "")},
		"after one with a secret":     {longChat(text+secret, 0, ""), longChat(text, 1, "")},
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			keys := redact.New(secret)
			var dir string
			record := func(long bool) ([][]byte, [][]byte) {
				clock := time.UnixMilli(1700000000000)
				w := newTestWriter(t, Options{Secrets: func() *redact.Set { return keys }, Now: func() time.Time { return clock }})
				var sent [][]byte
				for i, v := range values {
					body, err := provider.EncodeBody(v)
					if err != nil {
						t.Fatal(err)
					}
					if body.Long() != (body.Len() >= 1<<20) {
						t.Fatalf("body %d: long %v at %d bytes", i, body.Long(), body.Len())
					}
					b := body.Bytes()
					sent = append(sent, b)
					if !long {
						body = provider.BodyOf(b)
					}
					c := w.StartCall(Record{Purpose: PurposeMain})
					c.Request(1, "https://x/v1/chat/completions", nil, body)
					c.End(1, nil)
				}
				w.Flush()
				dir = w.Dir()
				return traceLines(t, w), sent
			}
			want, sent := record(false)
			got, _ := record(true)
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("line %d (%d bytes) differs from the one its bytes make (%d bytes) at byte %d", i, len(got[i]), len(want[i]), firstDiff(got[i], want[i]))
				}
			}
			if bytes.Contains(bytes.Join(got, nil), []byte(secret)) {
				t.Error("a secret is in the trace")
			}
			bodies, errs := readBodies(t, dir)
			for i := range sent {
				if errs[i] != nil || !bytes.Equal(bodies[i], scrubbed(keys, sent[i])) {
					t.Errorf("body %d read back differs from the one sent (%v)", i, errs[i])
				}
			}
		})
	}
}

// Tracing a long body kept as its value makes no copy of it, whole or as
// a patch of the one before: the record waits as the value and is encoded
// again a piece at a time as it is written, and a patch's insert is read
// from the pieces.
func TestALongBodyIsTracedWithoutACopyOfIt(t *testing.T) {
	text := strings.Repeat("func main() { fmt.Println(\"a \\\"quoted\\\" word\") }\n", (4<<20)/50)
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New("sk-secret-0123456789abcdef") }})
	for turns, want := range []string{`,"body":{`, `,"bodyPatch":{`} {
		body, err := provider.EncodeBody(longChat(text, turns, ""))
		if err != nil {
			t.Fatal(err)
		}
		c := w.StartCall(Record{Purpose: PurposeMain})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c.Request(1, "https://x/v1/chat/completions", nil, body)
		w.Flush()
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(body.Len()/4) {
			t.Fatalf("tracing a %d-byte body allocated %d bytes", body.Len(), got)
		}
		var last []byte
		for _, l := range traceLines(t, w) {
			if bytes.HasPrefix(l, []byte(`{"type":"request"`)) {
				last = l
			}
		}
		if !bytes.Contains(last[:min(len(last), 400)], []byte(want)) {
			t.Fatalf("request %d is not recorded with %s: %.300s", turns+1, want, last)
		}
	}
}
