package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
	"github.com/loopdev/loop/rpc"
)

// largePromptBytes is the size of BenchmarkLargePromptHeap's prompt text.
const largePromptBytes = 50 << 20

// promptLine is one repeated line of a large prompt: printable ASCII with
// quotes and backslashes that JSON escapes, as a pasted file would hold.
const promptLine = "func main() { fmt.Println(\"a \\\"quoted\\\" word\") } // 0123456789 the quick brown fox\n"

// largePromptRequest streams a session/prompt request whose text is n
// bytes of promptLine repeated, without holding the text: the client's
// memory does not count in the server's heap. acp sends it as ACP's one
// text block; lsp frames it with its Content-Length.
func largePromptRequest(sid string, n int, acp, lsp bool) io.Reader {
	esc, _ := jsonString(promptLine)
	head := `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","requestId":"big","text":"`
	tail := strings.Repeat("x", n%len(promptLine)) + `"}}`
	if acp {
		head = `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"`
		tail = strings.Repeat("x", n%len(promptLine)) + `"}]}}`
	}
	var body []io.Reader
	if lsp {
		size := len(head) + len(esc)*(n/len(promptLine)) + len(tail)
		body = append(body, strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n", size)))
	} else {
		tail += "\n"
	}
	body = append(body, strings.NewReader(head), &repeatReader{unit: []byte(esc), n: n / len(promptLine)}, strings.NewReader(tail))
	return io.MultiReader(body...)
}

// jsonString is s as the inside of a JSON string.
func jsonString(s string) (string, error) {
	var b bytes.Buffer
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), nil
}

// repeatReader reads unit n times.
type repeatReader struct {
	unit []byte
	n    int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	read := 0
	for read < len(p) && r.n > 0 {
		k := copy(p[read:], r.unit[r.off:])
		read += k
		r.off += k
		if r.off == len(r.unit) {
			r.off = 0
			r.n--
		}
	}
	if read == 0 {
		return 0, io.EOF
	}
	return read, nil
}

// lineWatcher reads the server's output in small pieces, counting bytes
// and remembering which methods it saw, without holding a whole message:
// NDJSON lines, or LSP frames (lsp).
type lineWatcher struct {
	r     *bufio.Reader
	bytes int
	lsp   bool
}

// until reads up to the first message whose beginning contains marker.
func (w *lineWatcher) until(marker string) error {
	for {
		head, err := w.next()
		if err != nil {
			return err
		}
		if bytes.Contains(head, []byte(marker)) {
			return nil
		}
	}
}

// next reads one message and returns its first 256 bytes.
func (w *lineWatcher) next() ([]byte, error) {
	if w.lsp {
		return w.nextFrame(false)
	}
	start := true
	var head []byte
	for {
		piece, err := w.r.ReadSlice('\n')
		w.bytes += len(piece)
		if start {
			head = append(head[:0], piece[:min(len(piece), 256)]...)
			start = false
		}
		if err == nil {
			return head, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// nextFrame reads an LSP frame and returns its first 256 bytes, or all
// of it (whole).
func (w *lineWatcher) nextFrame(whole bool) ([]byte, error) {
	n := -1
	for {
		h, err := w.r.ReadString('\n')
		w.bytes += len(h)
		if err != nil {
			return nil, err
		}
		if h = strings.TrimSpace(h); h == "" {
			break
		}
		if v, ok := strings.CutPrefix(h, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	if n < 0 {
		return nil, errors.New("a frame without Content-Length")
	}
	if whole {
		body := make([]byte, n)
		k, err := io.ReadFull(w.r, body)
		w.bytes += k
		return body, err
	}
	head, err := w.r.Peek(min(n, 256))
	head = bytes.Clone(head)
	if err != nil {
		return nil, err
	}
	k, err := w.r.Discard(n)
	w.bytes += k
	return head, err
}

// readMessage reads the next message whole (a short one).
func (w *lineWatcher) readMessage() (string, error) {
	if !w.lsp {
		line, err := w.r.ReadString('\n')
		w.bytes += len(line)
		return line, err
	}
	body, err := w.nextFrame(true)
	return string(body), err
}

// BenchmarkLargePromptHeap: one prompt of 50 MB of text through the real
// server in process, over pipes, answered by the scripted model or by a
// fake OpenAI or Anthropic server on 127.0.0.1 (the request body then
// holds the text too, and the trace records that body), each combination
// of model, dialect and framing a sub-benchmark with its own metrics; the
// client streams the request
// and reads the output in small pieces, so the heap is the server's.
// peak-heap-MB is the most the live heap held (sampled every millisecond,
// /memory/classes/heap/objects:bytes), peak-heap-x that over the text,
// settled-heap-MB the live heap after
// the run's session/state and a collection (the history holds the text
// once), client-MB what the client read. docs/performance.md, "One large
// prompt".
func BenchmarkLargePromptHeap(b *testing.B) {
	replies := map[string]string{
		"openai":           providertest.OpenAIText("Read", " it."),
		"openai-responses": providertest.ResponsesText("Read", " it."),
		"anthropic":        providertest.AnthropicText("Read", " it."),
	}
	for _, model := range []string{"scripted", "openai", "openai-responses", "anthropic"} {
		b.Run("model="+model, func(b *testing.B) {
			provider := `"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}`
			if reply, ok := replies[model]; ok {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, reply)
				}))
				b.Cleanup(srv.Close)
				provider = `"fake":{"api":"` + model + `","baseUrl":"` + srv.URL + `/v1","models":[{"id":"m1","contextWindow":100000000}]}`
			}
			for _, dialect := range []string{"native", "acp"} {
				for _, framing := range []string{"ndjson", "lsp"} {
					b.Run("dialect="+dialect+"/framing="+framing, func(b *testing.B) {
						benchLargePrompt(b, provider, dialect == "acp", framing == "lsp")
					})
				}
			}
		})
	}
}

func benchLargePrompt(b *testing.B, provider string, acp, lsp bool) {
	var peak, settled uint64
	var client int
	for b.Loop() {
		b.StopTimer()
		root := b.TempDir()
		must(b, os.WriteFile(filepath.Join(root, "script.json"), []byte(`{"turns":[{"steps":[{"text":"Read it."}]}]}`), 0o600))
		must(b, os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"titles":{"enabled":false},"providers":{`+provider+`}}`), 0o600))
		eng, err := engine.New(engine.Options{DataRoot: root})
		must(b, err)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		srv := rpc.NewServer(eng, rpc.Options{})
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), inR, outW); outW.Close() }()
		w := &lineWatcher{r: bufio.NewReaderSize(outR, 64<<10), lsp: lsp}
		frame := func(msg string) string {
			if lsp {
				return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(msg), msg)
			}
			return msg + "\n"
		}
		initialize, create := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"workspaceId":null}}`
		if acp {
			initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`
			create = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + b.TempDir() + `","mcpServers":[]}}`
		}
		_, err = io.WriteString(inW, frame(initialize))
		must(b, err)
		must(b, w.until(`"id":1,`))
		_, err = io.WriteString(inW, frame(create))
		must(b, err)
		var line string
		for !strings.Contains(line, `"id":2,`) {
			line, err = w.readMessage()
			must(b, err)
		}
		_, rest, _ := strings.Cut(line, `"sessionId":"`)
		sid, _, _ := strings.Cut(rest, `"`)
		runtime.GC()
		stop, sampled := make(chan struct{}), make(chan struct{})
		peak = 0
		go func() {
			defer close(sampled)
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			for {
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		w.bytes = 0
		b.StartTimer()
		go func() { _, _ = io.Copy(inW, largePromptRequest(sid, largePromptBytes, acp, lsp)) }()
		if acp {
			must(b, w.until(`"id":3,`))
		} else {
			must(b, w.until("session/agent_settled"))
			must(b, w.until(`"method":"session/state"`))
		}
		b.StopTimer()
		close(stop)
		<-sampled
		client = w.bytes
		runtime.GC()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		settled = s[0].Value.Uint64()
		if f := os.Getenv("LOOP_BENCH_HEAP"); f != "" {
			out, err := os.Create(f)
			must(b, err)
			must(b, pprof.WriteHeapProfile(out))
			out.Close()
		}
		inW.Close()
		go io.Copy(io.Discard, outR)
		must(b, <-done)
		b.StartTimer()
	}
	const mb = 1 << 20
	b.ReportMetric(float64(peak)/mb, "peak-heap-MB")
	b.ReportMetric(float64(peak)/largePromptBytes, "peak-heap-x")
	b.ReportMetric(float64(settled)/mb, "settled-heap-MB")
	b.ReportMetric(float64(client)/mb, "client-MB")
}
