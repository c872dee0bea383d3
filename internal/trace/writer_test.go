package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

func newTestWriter(t *testing.T, o Options) *Writer {
	t.Helper()
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), "traces", "global", "s1")
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	w := NewWriter(o)
	t.Cleanup(w.Close)
	return w
}

// testLogger logs into the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{t}, nil))
}

type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// lineLog keeps the lines logged into it, from any goroutine.
type lineLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
}

func TestTraceFilesArePrivate(t *testing.T) {
	w := newTestWriter(t, Options{SessionID: "s1"})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "hi"}})
	w.Flush()
	fi, err := os.Stat(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("trace dir mode %v, want 0700", fi.Mode().Perm())
	}
	fi, err = os.Stat(filepath.Join(w.Dir(), SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("segment mode %v, want 0600", fi.Mode().Perm())
	}
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 2 || tr.Records[0].Type != TypeTrace || tr.Records[0].SessionID != "s1" || tr.Records[1].Input.Text != "hi" {
		t.Fatalf("records %+v", tr.Records)
	}
}

func TestRequestBodyIsRecordedByteForByte(t *testing.T) {
	w := newTestWriter(t, Options{})
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"<a> & \u00e9 \"q\""}],"n":1.50}`)
	c := w.StartCall(Record{Purpose: PurposeMain, Provider: "p", API: "openai", Model: "m"})
	h := http.Header{"Authorization": {"Bearer sk-abcdefgh"}, "X-Api-Key": {"k-12345678"}, "Content-Type": {"application/json"}}
	c.Request(1, "https://user:pw-secret@example.com/v1/chat/completions?key=q-secret", h, provider.BodyOf(body))
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var req Record
	for _, r := range tr.Records {
		if r.Type == TypeRequest {
			req = r
		}
	}
	if !bytes.Equal(req.Body, body) {
		t.Errorf("body\n%s\nwant\n%s", req.Body, body)
	}
	if len(req.Headers) != 1 || req.Headers["Content-Type"] != "application/json" {
		t.Errorf("headers %v: credentials must be dropped", req.Headers)
	}
	raw, _ := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	for _, s := range []string{"sk-abcdefgh", "k-12345678", "pw-secret", "q-secret"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("trace holds %q:\n%s", s, raw)
		}
	}
	if !strings.Contains(req.URL, "example.com/v1/chat/completions") {
		t.Errorf("url %q", req.URL)
	}
}

// Each request records its own URL and headers, though a writer keeps the
// last request's cleaned (Writer.requestHead): a header or URL that
// changes, or a header changed in place after it was sent, shows.
func TestEachRequestRecordsItsOwnURLAndHeaders(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	h := http.Header{"Authorization": {"Bearer sk-abcdefgh"}, "Accept": {"text/event-stream"}}
	body := []byte(`{"n":1}`)
	c.Request(1, "https://example.com/v1/a", h, provider.BodyOf(body))
	h.Set("Accept", "application/json") // the same map, changed
	c.Request(2, "https://example.com/v1/a", h, provider.BodyOf(body))
	c.Request(3, "https://example.com/v1/b?key=q-secret", h, provider.BodyOf(body))
	h.Set("X-Trace", "1")
	c.Request(4, "https://example.com/v1/b?key=q-secret", h, provider.BodyOf(body))
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Records {
		if r.Type == TypeRequest {
			got = append(got, fmt.Sprintf("%s %s %s %q", r.URL, r.Headers["Accept"], r.Headers["X-Trace"], r.Headers["Authorization"]))
		}
	}
	want := []string{
		`https://example.com/v1/a text/event-stream  ""`,
		`https://example.com/v1/a application/json  ""`,
		`https://example.com/v1/b?key=%5BREDACTED%5D application/json  ""`,
		`https://example.com/v1/b?key=%5BREDACTED%5D application/json 1 ""`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSecretsAreScrubbedFromEveryLine(t *testing.T) {
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New("sk-live-998877") }})
	w.Add(&Record{Type: TypeTool, Name: "bash", Result: []Block{{Type: "text", Text: "OPENAI_API_KEY=sk-live-998877"}}})
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Body(1, []byte("data: {\"error\":\"bad key sk-live-998877\"}\n\n"))
	c.End(1, errors.New("model error: key sk-live-998877 refused"))
	w.Flush()
	raw, _ := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	if bytes.Contains(raw, []byte("sk-live-998877")) {
		t.Fatalf("secret in trace:\n%s", raw)
	}
	if got := bytes.Count(raw, []byte(Redacted)); got != 3 {
		t.Errorf("%d redactions, want 3:\n%s", got, raw)
	}
}

func TestStreamEventsAreSplitAsDelivered(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	stream := "data: {\"a\":1}\n\nevent: x\r\ndata: 2\r\n\r\ndata: [DONE]\n\ntrailing"
	for i := 0; i < len(stream); i++ {
		c.Body(1, []byte(stream[i:i+1]))
	}
	c.End(1, nil)
	w.Flush()
	tr, _ := Read(w.Dir())
	var got []string
	for _, r := range tr.Records {
		if r.Type == TypeEvent {
			got = append(got, r.Raw)
		}
	}
	want := []string{"data: {\"a\":1}\n\n", "event: x\r\ndata: 2\r\n\r\n", "data: [DONE]\n\n", "trailing"}
	if fmt.Sprint(got) != fmt.Sprint(want) || strings.Join(got, "") != stream {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestTraceStaysWithinItsBoundDroppingOldestSegments(t *testing.T) {
	const bound = 64 << 10
	w := newTestWriter(t, Options{MaxBytes: bound})
	text := strings.Repeat("x", 1000)
	for i := range 400 {
		w.Add(&Record{Type: TypePrompt, RequestID: fmt.Sprint(i), Input: &Input{Text: text}})
		if i%50 == 0 {
			w.Flush()
		}
	}
	w.Flush()
	var total int64
	entries, _ := os.ReadDir(w.Dir())
	for _, e := range entries {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > bound {
		t.Errorf("trace is %d bytes, bound %d", total, bound)
	}
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Truncated || tr.Segments[0] == 1 {
		t.Errorf("segments %v: the oldest should be gone", tr.Segments)
	}
	last := tr.Records[len(tr.Records)-1]
	if last.RequestID != "399" {
		t.Errorf("last record %q, want the newest (399)", last.RequestID)
	}
	if _, err := NewReplayer(tr); err == nil || !strings.Contains(err.Error(), "oldest segments") {
		t.Errorf("replaying a truncated trace: %v", err)
	}
}

func TestOneRecordLargerThanTheBoundStillLands(t *testing.T) {
	w := newTestWriter(t, Options{MaxBytes: 4 << 10})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: strings.Repeat("y", 10<<10)}})
	w.Add(&Record{Type: TypePrompt, Input: &Input{Text: "small"}})
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if last := tr.Records[len(tr.Records)-1]; last.Input == nil || last.Input.Text != "small" {
		t.Fatalf("last record %+v", last)
	}
}

// failingFS fails every open and write while broken is set.
type failingFS struct {
	osFS
	broken atomic.Bool
}

var errInjected = errors.New("injected: no space left on device")

func (f *failingFS) OpenFile(name string, flag int, perm os.FileMode) (io.WriteCloser, error) {
	if f.broken.Load() {
		return nil, errInjected
	}
	file, err := f.osFS.OpenFile(name, flag, perm)
	return failingFile{file, f}, err
}

type failingFile struct {
	io.WriteCloser
	fs *failingFS
}

func (f failingFile) Write(p []byte) (int, error) {
	if f.fs.broken.Load() {
		return 0, errInjected
	}
	return f.WriteCloser.Write(p)
}

func TestWriteFailureIsLoggedOnceAndMarksTheTraceIncomplete(t *testing.T) {
	fsys := &failingFS{}
	var logs lineLog
	w := newTestWriter(t, Options{FS: fsys, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w.Add(&Record{Type: TypePrompt, RequestID: "before"})
	w.Flush()
	fsys.broken.Store(true)
	for i := range 3 {
		w.Add(&Record{Type: TypePrompt, RequestID: fmt.Sprint("lost", i)})
		w.Flush()
	}
	if !w.Incomplete() {
		t.Error("trace not marked incomplete")
	}
	if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "no space left") {
		t.Errorf("logs %q, want one line naming the failure", lines)
	}
	fsys.broken.Store(false)
	w.Add(&Record{Type: TypePrompt, RequestID: "after"})
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Incomplete {
		t.Error("reader does not see the trace as incomplete")
	}
	var ids []string
	for _, r := range tr.Records {
		switch r.Type {
		case TypePrompt:
			ids = append(ids, r.RequestID)
		case TypeIncomplete:
			ids = append(ids, "incomplete:"+r.Reason)
		}
	}
	if len(ids) != 3 || ids[0] != "before" || !strings.HasPrefix(ids[1], "incomplete:3 records lost") || ids[2] != "after" {
		t.Errorf("records %q", ids)
	}
}

func TestUnwritableTraceDirectoryNeverBlocksAdd(t *testing.T) {
	base := t.TempDir()
	// A file where the traces directory should be: every write fails.
	if err := os.WriteFile(filepath.Join(base, "traces"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lineLog
	w := newTestWriter(t, Options{Dir: filepath.Join(base, "traces", "global", "s1"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 1000 {
		w.Add(&Record{Type: TypeEvent, Raw: "data: x\n\n"})
	}
	w.Flush()
	if !w.Incomplete() || len(logs.lines()) != 1 {
		t.Errorf("incomplete %v, log lines %q", w.Incomplete(), logs.lines())
	}
}

func TestEventLinesEncodeLikeEveryOtherRecord(t *testing.T) {
	for _, raw := range []string{"data: {\"a\":\"<b>&\"}\n\n", "tab\t\x01\x1f\\ \u2028\u2029 é 😀", "bad \xff utf8\r\n"} {
		fast, _ := encodeLine(&Record{Type: TypeEvent, T: 7, Call: 2, Attempt: 1, Raw: raw})
		slow, err := jsonenc.Marshal(&Record{Type: TypeEvent, T: 7, Call: 2, Attempt: 1, Raw: raw})
		if err != nil {
			t.Fatal(err)
		}
		if string(fast) != string(slow)+"\n" {
			t.Errorf("raw %q:\n%s\nwant\n%s", raw, fast, slow)
		}
	}
}

// A secret with characters JSON escapes (a quote, a backslash) is
// scrubbed in its escaped forms too: inside a string of the line, and
// inside a body that is itself JSON held in a string.
func TestSecretsThatJSONEscapesAreScrubbedToo(t *testing.T) {
	secret := `k3y"with\slash`
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New(secret) }})
	w.Add(&Record{Type: TypeTool, Name: "bash", Result: []Block{{Type: "text", Text: "KEY=" + secret}}})
	body, _ := json.Marshal(map[string]string{"error": "bad key " + secret})
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Body(1, append(append([]byte("data: "), body...), "\n\n"...))
	c.End(1, nil)
	w.Flush()
	raw, _ := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	for _, form := range []string{"k3y", `with\slash`, `with\\slash`, `with\\\\slash`} {
		if bytes.Contains(raw, []byte(form)) {
			t.Fatalf("secret (%s) in trace:\n%s", form, raw)
		}
	}
}

// Events are timed by the monotonic clock from their call's start: each
// lies between the call's time and the result's, in order.
func TestEventTimesLieBetweenTheCallAndItsResult(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	for i := range 20 {
		c.Body(1, []byte(fmt.Sprintf("data: %d\n\n", i)))
		if i%5 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	c.Finish(Record{StopReason: "stop"})
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var call, result int64
	var events []int64
	for _, r := range tr.Records {
		switch r.Type {
		case TypeCall:
			call = r.T
		case TypeEvent:
			events = append(events, r.T)
		case TypeResult:
			result = r.T
		}
	}
	if len(events) != 20 || events[0] < call || events[len(events)-1] > result || events[len(events)-1] < call+6 {
		t.Fatalf("call at %d, events %v, result at %d", call, events, result)
	}
	for i := 1; i < len(events); i++ {
		if events[i] < events[i-1] {
			t.Fatalf("event times go back: %v", events)
		}
	}
}
