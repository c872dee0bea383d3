package wire

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

const tailRequest = `{"jsonrpc":"2.0","id":424242,"method":"after"}`

// Inputs that once made framing quadratic (or worse), each with n repeats
// of its troublesome part, followed by a request that must come through.
var costlyInputs = []struct {
	name    string
	framing Framing
	input   func(n int) string
}{
	// Each line was re-parsed from the start of the open value.
	{"ndjson lines of [", NDJSON, func(n int) string {
		return strings.Repeat("[\n", n) + tailRequest + "\n"
	}},
	{"ndjson blank lines inside a value", NDJSON, func(n int) string {
		return "[\n" + strings.Repeat(" \t\n", n) + "]\n" + tailRequest + "\n"
	}},
	{"ndjson pretty-printed array", NDJSON, func(n int) string {
		return "[\n" + strings.Repeat(`  {"k": "v", "n": [1, 2.5e3, true, null]},`+"\n", n) + "0]\n" + tailRequest + "\n"
	}},
	{"ndjson object keys one a line", NDJSON, func(n int) string {
		var b strings.Builder
		b.WriteString("{\n")
		for i := range n {
			b.WriteString(`"k` + strconv.Itoa(i) + `":` + "\n" + `"v",` + "\n")
		}
		b.WriteString(`"end":0}` + "\n" + tailRequest + "\n")
		return b.String()
	}},
	// Each frame declared the length of all the input left, so its body
	// was the rest of the input, read and handed back for every frame.
	{"lsp lengths that swallow the rest", LSP, func(n int) string {
		body := `{"jsonrpc":"2.0","method":"x"}`
		frames := make([]string, n+1)
		frames[n] = lsp(tailRequest)
		rest := len(frames[n])
		for i := n - 1; i >= 0; i-- {
			frames[i] = "Content-Length: " + strconv.Itoa(len(body)+rest) + "\r\n\r\n" + body
			rest += len(frames[i])
		}
		return strings.Join(frames, "")
	}},
	// Each frame handed back one byte by stacking a new 64 KiB reader on
	// the one before.
	{"lsp lengths a byte too long", LSP, func(n int) string {
		return strings.Repeat("Content-Length: 3\r\n\r\n{}", n) + lsp(tailRequest)
	}},
	// Broken JSON whose string runs into the next header.
	{"lsp broken bodies too long", LSP, func(n int) string {
		return strings.Repeat("Content-Length: 40\r\n\r\n"+`{"a":"b`, n) + lsp(tailRequest)
	}},
	{"lsp blank lines and headers", LSP, func(n int) string {
		return strings.Repeat("\r\n", n) + "Content-Type: a\r\n" + strings.Repeat("X-Header: y\r\n", n) + lsp(tailRequest)
	}},
	{"lsp garbage to resynchronise", LSP, func(n int) string {
		return "bogus\r\n" + strings.Repeat("not a header at all\r\n", n) + lsp(tailRequest)
	}},
}

// readAllFrames reads every frame of in and reports the framing's work,
// the bytes allocated meanwhile, and whether the tail request came through
// whole.
func readAllFrames(t testing.TB, in string, f Framing) (work, allocated int64, sawTail bool) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	work, sawTail = frameAll(t, in, f)
	runtime.ReadMemStats(&after)
	return work, int64(after.TotalAlloc - before.TotalAlloc), sawTail
}

// frameAll reads every frame of in and reports the framing's work and
// whether the tail request came through whole.
func frameAll(t testing.TB, in string, f Framing) (work int64, sawTail bool) {
	r := newFrameReader(strings.NewReader(in), f, func(Framing) {})
	for i := 0; ; i++ {
		if i > len(in)+16 {
			t.Fatalf("no progress after %d frames", i)
		}
		b, err := r.next()
		r.takeErrs()
		misframed := r.takeMisframed() != ""
		if b != nil && bytes.Contains(b, []byte("424242")) && !misframed && classify(b).reject == nil {
			sawTail = true
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatal(err)
			}
			return r.work(), sawTail
		}
	}
}

// Framing costs O(bytes) whatever the input: the bytes it reads, scans and
// decodes, and the memory it allocates, stay within a constant factor of
// the input's size at every size. (Counted, not timed:
// BenchmarkFramingCostPerByte shows the time.)
func TestFramingWorkIsLinearInTheInput(t *testing.T) {
	for _, c := range costlyInputs {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []int{100, 1000, 10000} {
				in := c.input(n)
				work, allocated, sawTail := readAllFrames(t, in, c.framing)
				if !sawTail {
					t.Fatalf("n=%d: the request after the input never came through", n)
				}
				if limit := 4*int64(len(in)) + 1024; work > limit {
					t.Fatalf("n=%d: framing %d bytes of input cost %d bytes of work, over %d", n, len(in), work, limit)
				}
				if limit := 64*int64(len(in)) + 1<<20; allocated > limit {
					t.Fatalf("n=%d: framing %d bytes of input allocated %d bytes, over %d", n, len(in), allocated, limit)
				}
			}
		})
	}
}

// 100,000 NDJSON lines holding only "[" are answered: the open values are
// refused (each as soon as it nests deeper than JSON decoders accept, the
// last when the request arrives) and the request after them is answered.
func TestHundredThousandLinesOfOpenBracketsAreAnswered(t *testing.T) {
	s := newServer(t, Options{}, nil)
	// Written from a goroutine: the replies must be read while it writes.
	// Cleanup closes the pipe, which ends it if the stream stops reading.
	go io.WriteString(s.in, strings.Repeat("[\n", 100_000)+`{"jsonrpc":"2.0","id":"next","method":"echo","params":["ok"]}`+"\n")
	refused := 0
	for {
		got := s.readFrame(NDJSON)
		if strings.Contains(got, `"result"`) {
			if norm(t, got) != norm(t, `{"jsonrpc":"2.0","id":"next","result":["ok"]}`) {
				t.Fatalf("got %s", got)
			}
			break
		}
		if id, code, _ := errorOf(t, got); id != "null" || code != ParseError {
			t.Fatalf("reply %s", got)
		}
		refused++
	}
	// 100,000 levels at most 10,000 deep: ten values.
	if want := (100_000 + maxDepth) / (maxDepth + 1); refused != want {
		t.Fatalf("%d parse errors, want %d", refused, want)
	}
}
