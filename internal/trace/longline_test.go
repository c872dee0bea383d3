package trace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// longPromptText is about n bytes of text with what JSON escapes, and
// secret at each of the offsets given (where a piece of a long line may
// end, and across the ends).
func longPromptText(n int, secret string, at ...int) string {
	unit := "pasted \"code\" with \\ and\ttabs, é and \u2028\n"
	b := []byte(strings.Repeat(unit, n/len(unit)+1)[:n])
	for _, i := range at {
		copy(b[i:], secret)
	}
	return strings.ToValidUTF8(string(b), "?")
}

// traceLines is every line of the trace's first segment.
func traceLines(t *testing.T, w *Writer) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(raw, []byte("\n"))
}

// A prompt's long text and a long request body wait for the disk as
// they are and are written a piece at a time, each line exactly as the
// whole line, scrubbed whole, was written before: a secret lying across
// the pieces' ends is found as surely as one inside a piece.
func TestALongLineWrittenInPiecesIsTheWholeLineScrubbed(t *testing.T) {
	const secret = `sk-k3y"with\slash-0123456789`
	const n = 300 << 10
	cases := map[string][]int{
		"no secret":                    nil,
		"secret at the start":          {0},
		"secrets across piece ends":    {32<<10 - 5, 64<<10 - 3, 96<<10 - 20, 160 << 10},
		"secret at the end":            {n - len(secret)},
		"secret after a quiet stretch": {250 << 10},
	}
	for name, at := range cases {
		t.Run(name, func(t *testing.T) {
			keys := redact.New(secret)
			w := newTestWriter(t, Options{Secrets: func() *redact.Set { return keys }})
			text := longPromptText(n, secret, at...)
			w.Add(&Record{Type: TypeTool, Name: "bash"})
			prompt := &Record{Type: TypePrompt, RunID: "r1", RequestID: "q1", Input: &Input{Text: text, Skills: []string{"s"}}}
			w.Add(prompt)
			body, _ := jsonenc.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": text}}})
			c := w.StartCall(Record{Purpose: PurposeMain})
			c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(body))
			c.End(1, nil)
			w.Flush()

			want, err := encodeLine(prompt)
			if err != nil {
				t.Fatal(err)
			}
			want = scrubbed(keys, want)
			var gotPrompt, gotRequest []byte
			for _, l := range traceLines(t, w) {
				switch {
				case bytes.HasPrefix(l, []byte(`{"type":"prompt"`)):
					gotPrompt = l
				case bytes.HasPrefix(l, []byte(`{"type":"request"`)):
					gotRequest = l
				}
			}
			if !bytes.Equal(gotPrompt, want) {
				t.Errorf("prompt line of %d bytes differs from the whole line scrubbed (%d bytes) at byte %d", len(gotPrompt), len(want), firstDiff(gotPrompt, want))
			}
			if len(at) > 0 && bytes.Contains(gotPrompt, []byte("k3y")) {
				t.Error("a secret is in the prompt line")
			}
			wantBody := scrubbed(keys, body)
			if !bytes.Contains(gotRequest, append(append([]byte(`,"body":`), wantBody...), "}\n"...)) {
				t.Errorf("the request line does not end in the body scrubbed whole")
			}
			if len(at) > 0 && bytes.Contains(gotRequest, []byte("k3y")) {
				t.Error("a secret is in the request line")
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A prompt of 4 MB costs the trace pieces, not a copy of its line: the
// line was encoded whole into a buffer of its own, one more copy of the
// text beside the history's while it waited for the disk
// (docs/performance.md, "One large prompt").
func TestALongPromptIsTracedWithoutACopyOfItsText(t *testing.T) {
	text := longPromptText(4<<20, "")
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New("sk-not-in-the-text") }})
	w.Add(&Record{Type: TypeTool, Name: "bash"})
	w.Flush()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w.Add(&Record{Type: TypePrompt, RunID: "r1", Input: &Input{Text: text}})
	w.Flush()
	runtime.ReadMemStats(&after)
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("%.3f× the text", float64(n)/float64(len(text)))
	if limit := uint64(len(text)) / 4; n > limit {
		t.Errorf("tracing a prompt of %d bytes allocated %d bytes, want at most %d: its line was built whole", len(text), n, limit)
	}
	lines := traceLines(t, w)
	if got := lines[len(lines)-2]; len(got) < len(text) || !bytes.HasPrefix(got, []byte(`{"type":"prompt"`)) {
		t.Fatalf("no prompt line: %.100s", got)
	}
}

// A provider without an HTTP body has its logical request traced
// (LogicalOf): a long one is encoded a piece at a time as it is written,
// into the very line that encoding it whole made.
func TestALongLogicalRequestIsWrittenInPiecesAsItsWholeLine(t *testing.T) {
	const secret = "sk-logical-0123456789"
	for _, n := range []int{100, 300 << 10} {
		keys := redact.New(secret)
		w := newTestWriter(t, Options{Secrets: func() *redact.Set { return keys }})
		logical := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": []Block{{Type: "text", Text: longPromptText(n, secret, n/2)}}}}}
		c := w.StartCall(Record{Purpose: PurposeMain, RunID: "r1", Model: "m", LogicalOf: logical})
		c.End(1, nil)
		w.Flush()
		whole, err := jsonenc.Append(nil, logical)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeLine(&Record{Type: TypeCall, T: 0, Call: 1, Purpose: PurposeMain, RunID: "r1", Model: "m", Logical: whole})
		if err != nil {
			t.Fatal(err)
		}
		want = scrubbed(keys, want)
		var got []byte
		for _, l := range traceLines(t, w) {
			if bytes.HasPrefix(l, []byte(`{"type":"call"`)) {
				got = l
			}
		}
		// The times differ: compare from the first member after them.
		cut := func(b []byte) []byte { return b[bytes.Index(b, []byte(`,"call":`)):] }
		if got == nil || !bytes.Equal(cut(got), cut(want)) {
			t.Errorf("text of %d bytes: the call line differs from the whole line scrubbed", n)
		}
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("text of %d bytes: the secret is in the line", n)
		}
	}
}

// tornFS fails one write, the failAt-th, after writing half of it (a
// full disk), and takes every other.
type tornFS struct {
	osFS
	writes, failAt int
}

func (f *tornFS) OpenFile(name string, flag int, perm os.FileMode) (io.WriteCloser, error) {
	file, err := f.osFS.OpenFile(name, flag, perm)
	return &tornFile{file, f}, err
}

type tornFile struct {
	io.WriteCloser
	fs *tornFS
}

func (f *tornFile) Write(p []byte) (int, error) {
	if f.fs.writes++; f.fs.writes == f.fs.failAt {
		n, _ := f.WriteCloser.Write(p[:len(p)/2])
		return n, errors.New("injected: no space left on device")
	}
	return f.WriteCloser.Write(p)
}

// A long line is written in pieces: a write that fails part way through
// it leaves a torn line, and the records after it go into a new segment
// instead of onto the torn one, so that the trace still reads, as
// incomplete, with every record that reached the disk.
func TestATornLongLineEndsItsSegment(t *testing.T) {
	fsys := &tornFS{failAt: 5}
	w := newTestWriter(t, Options{FS: fsys})
	w.Add(&Record{Type: TypePrompt, RequestID: "before"})
	w.Flush()
	w.Add(&Record{Type: TypePrompt, RequestID: "torn", Input: &Input{Text: longPromptText(300<<10, "")}})
	w.Flush()
	if fsys.writes < fsys.failAt {
		t.Fatalf("%d writes, the fault was not reached", fsys.writes)
	}
	w.Add(&Record{Type: TypePrompt, RequestID: "after"})
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatalf("the trace does not read: %v", err)
	}
	if !tr.Incomplete {
		t.Error("the trace is not incomplete")
	}
	var ids []string
	for _, r := range tr.Records {
		if r.Type == TypePrompt {
			ids = append(ids, r.RequestID)
		}
	}
	if !slices.Equal(ids, []string{"before", "after"}) {
		t.Errorf("prompts %q, want before and after", ids)
	}
}
