package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// longValue is a request whose body is n bytes or more: a history message
// of code, with what JSON escapes and multi-byte UTF-8.
func longValue(n int) any {
	text := strings.Repeat("func main() { fmt.Println(\"a \\\"quoted\\\" wörd\") } // 中文 <tag> &\n", n/64+1)
	return map[string]any{"model": "m1", "stream": true, "messages": []map[string]string{{"role": "user", "content": text}}}
}

// A long body is sent a piece at a time, as the bytes its whole encoding
// has, with its Content-Length, and sent again the same when an attempt
// is retried; a short one as before.
func TestALongBodyIsSentAsItsWholeEncodingWithItsLength(t *testing.T) {
	for name, v := range map[string]any{"long": longValue(3 << 20), "short": longValue(1 << 10)} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.ReplaceAll(want, []byte(`\u003c`), []byte("<")) // no HTML escaping
			want = bytes.ReplaceAll(want, []byte(`\u003e`), []byte(">"))
			want = bytes.ReplaceAll(want, []byte(`\u0026`), []byte("&"))
			var mu sync.Mutex
			var got [][]byte
			var lengths []int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got, lengths = append(got, b), append(lengths, r.ContentLength)
				first := len(got) == 1
				mu.Unlock()
				if first {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			body, err := EncodeBody(v)
			if err != nil {
				t.Fatal(err)
			}
			if body.Long() != (name == "long") || body.Len() != len(want) {
				t.Fatalf("body of %d bytes, long %v; want %d bytes", body.Len(), body.Long(), len(want))
			}
			tr := newTransport(Config{HTTPClient: srv.Client(), RetryBaseDelay: 1})
			err = tr.stream(context.Background(), srv.URL, nil, body, func(r io.Reader) error {
				_, err := io.Copy(io.Discard, r)
				return err
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%d attempts, want 2", len(got))
			}
			for i := range got {
				if !bytes.Equal(got[i], want) || lengths[i] != int64(len(want)) {
					t.Errorf("attempt %d sent %d bytes with Content-Length %d; want its %d bytes as encoded whole", i+1, len(got[i]), lengths[i], len(want))
				}
			}
			if b := body.Bytes(); !bytes.Equal(b, want) {
				t.Error("Bytes differs from the encoding")
			}
		})
	}
}

// A long body is kept as its value: making it costs no copy of it.
func TestALongBodyIsNotEncodedWhole(t *testing.T) {
	v := longValue(4 << 20)
	var before, after runtimeMem
	before.read()
	body, err := EncodeBody(v)
	after.read()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.total - before.total; got > uint64(body.Len()/4) {
		t.Fatalf("making a %d-byte body allocated %d bytes", body.Len(), got)
	}
}

// runtimeMem reads how much the process allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.total = ms.TotalAlloc
}
