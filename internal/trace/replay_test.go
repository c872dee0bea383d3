package trace

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/provider"
)

// recordCalls writes a trace of one prompt and the given main calls, each
// answered with one text event.
func recordCalls(t *testing.T, bodies ...string) *Trace {
	t.Helper()
	w := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "rec")})
	w.Add(&Record{Type: TypePrompt, RequestID: "r1", Input: &Input{Text: "hi"}})
	for i, body := range bodies {
		c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m", RequestID: "r1"})
		c.Request(1, "http://x/v1/chat/completions", http.Header{}, provider.BodyOf([]byte(body)))
		c.Response(1, 200)
		c.Body(1, []byte("data: {\"n\":"+string(rune('0'+i))+"}\n\ndata: [DONE]\n\n"))
		c.End(1, nil)
		c.Finish(Record{StopReason: "stop"})
	}
	w.Add(&Record{Type: TypeEnd, Step: TypePrompt, Outcome: "completed"})
	w.Close()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// send makes one replayed request under a live call of the replay's own
// trace, as the engine does, and returns the answer's body or status.
func send(t *testing.T, rp *Replayer, live *Writer, body string) (int, string) {
	t.Helper()
	call := live.StartCall(Record{Purpose: PurposeMain})
	req, _ := http.NewRequestWithContext(provider.WithObserver(t.Context(), call), http.MethodPost, "http://elsewhere/v1/chat/completions", strings.NewReader(body))
	resp, err := rp.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReplayAnswersFromTheTraceAndNamesTheFirstRequestThatDiffers(t *testing.T) {
	tr := recordCalls(t, `{"messages":["a"]}`, `{"messages":["a","b"]}`, `{"messages":["a","b","c"]}`)
	rp, err := NewReplayer(tr)
	if err != nil {
		t.Fatal(err)
	}
	live := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "live")})
	defer live.Close()
	status, got := send(t, rp, live, `{"messages":["a"]}`)
	if status != 200 || got != "data: {\"n\":0}\n\ndata: [DONE]\n\n" {
		t.Fatalf("first answer %d %q", status, got)
	}
	if status, _ := send(t, rp, live, `{"messages":["a","B"]}`); status != http.StatusBadRequest {
		t.Fatalf("a differing request was answered: %d", status)
	}
	d := rp.Divergence()
	if d == nil || d.Ordinal != 2 || rp.Made() != 1 {
		t.Fatalf("divergence %+v, made %d", d, rp.Made())
	}
	text := d.Describe()
	for _, want := range []string{"request 2 (main #2, prompt r1, attempt 1, oa/m) diverged: the request differs", "-     \"b\"", "+     \"B\""} {
		if !strings.Contains(text, want) {
			t.Errorf("description lacks %q:\n%s", want, text)
		}
	}
}

func TestReplayReportsARecordedRequestItNeverMadeAndOneTheTraceLacks(t *testing.T) {
	tr := recordCalls(t, `{"m":1}`, `{"m":2}`)
	rp, _ := NewReplayer(tr)
	live := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "live")})
	defer live.Close()
	send(t, rp, live, `{"m":1}`)
	d := rp.Finish()
	if d == nil || d.Ordinal != 2 || !strings.Contains(d.Describe(), "the replay never made this request") {
		t.Fatalf("divergence %+v", d)
	}

	rp, _ = NewReplayer(recordCalls(t, `{"m":1}`))
	send(t, rp, live, `{"m":1}`)
	if status, _ := send(t, rp, live, `{"m":2}`); status != http.StatusBadRequest {
		t.Fatalf("an extra request was answered: %d", status)
	}
	if d := rp.Finish(); d == nil || d.Call != nil || !strings.Contains(d.Describe(), "main request #2 diverged: the trace has no such request") {
		t.Fatalf("divergence %+v", d)
	}
}

func TestReadRefusesATraceOfAnotherFormatVersion(t *testing.T) {
	tr := recordCalls(t, `{"model":"m"}`)
	seg := filepath.Join(tr.Dir, SegmentName(1))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	later := fmt.Sprintf(`"version":%d,`, Version+1)
	other := strings.Replace(string(data), fmt.Sprintf(`"version":%d,`, Version), later, 1)
	if other == string(data) {
		t.Fatalf("no version in the segment header: %s", data)
	}
	if err := os.WriteFile(seg, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(tr.Dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("version %d", Version+1)) {
		t.Fatalf("a trace of a later format version was read as this one: %v", err)
	}
}

// A segment an earlier Loop wrote (format version 1: every body whole)
// still reads and replays.
func TestATraceOfFormatVersionOneStillReplays(t *testing.T) {
	tr := recordCalls(t, `{"m":1}`)
	seg := filepath.Join(tr.Dir, SegmentName(1))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(data), fmt.Sprintf(`"version":%d,`, Version), `"version":1,`, 1)
	if old == string(data) {
		t.Fatalf("no version in the segment header: %s", data)
	}
	if err := os.WriteFile(seg, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err = Read(tr.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplayer(tr)
	if err != nil {
		t.Fatal(err)
	}
	live := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "live")})
	defer live.Close()
	if status, body := send(t, rp, live, `{"m":1}`); status != http.StatusOK || !strings.Contains(body, `"n":0`) {
		t.Fatalf("version 1 trace answered %d %q", status, body)
	}
	if d := rp.Finish(); d != nil {
		t.Fatalf("diverged: %s", d.Describe())
	}
}

// A trace that lost records between others (a write failed, the disk fell
// behind) is refused: its answers no longer line up with its requests. One
// whose last line was cut short, as kill -9 leaves it, still replays.
func TestReplayRefusesATraceThatLostRecordsButNotOneCutShort(t *testing.T) {
	tr := recordCalls(t, `{"m":1}`, `{"m":2}`)
	seg := filepath.Join(tr.Dir, SegmentName(1))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	cut := append(append([]byte{}, data...), `{"type":"result","t":17`...)
	if err := os.WriteFile(seg, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err = Read(tr.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Incomplete || tr.Lost != "" {
		t.Fatalf("a trace cut short: incomplete %v, lost %q", tr.Incomplete, tr.Lost)
	}
	if _, err := NewReplayer(tr); err != nil {
		t.Fatalf("a trace cut short at its end is refused: %v", err)
	}

	lines := strings.SplitAfter(string(data), "\n")
	lost := `{"type":"incomplete","t":1796141922201,"reason":"3 records lost: the disk fell behind"}` + "\n"
	gap := strings.Join(lines[:3], "") + lost + strings.Join(lines[3:], "")
	if err := os.WriteFile(seg, []byte(gap), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err = Read(tr.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplayer(tr); err == nil || !strings.Contains(err.Error(), "the disk fell behind") {
		t.Fatalf("a trace that lost records is replayed: %v", err)
	}
}

// Providers that number tool calls from call_1 in every reply give one
// session many calls of one id: each replayed call gets the result
// recorded after its own reply, not the last one of that id.
func TestReplayPairsEachToolCallWithTheResultOfItsOwnReply(t *testing.T) {
	w := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "rec")})
	w.Add(&Record{Type: TypePrompt, RunID: "run1", RequestID: "r1", Input: &Input{Text: "hi"}})
	for i, result := range []string{"first result", "second result"} {
		c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m", RunID: "run1", RequestID: "r1"})
		c.Request(1, "http://x/v1/chat/completions", http.Header{}, provider.BodyOf([]byte(`{"turn":`+string(rune('1'+i))+`}`)))
		c.Response(1, 200)
		c.Body(1, []byte("data: {\"tool\":\"call_1\"}\n\ndata: [DONE]\n\n"))
		c.End(1, nil)
		c.Finish(Record{StopReason: "toolUse"})
		w.Add(&Record{Type: TypeTool, RunID: "run1", ToolCallID: "call_1", Name: "read", Result: []Block{{Type: "text", Text: result}}})
	}
	w.Add(&Record{Type: TypeEnd, Step: TypePrompt, RunID: "run1", Outcome: "completed"})
	w.Close()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplayer(tr)
	if err != nil {
		t.Fatal(err)
	}
	live := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "live")})
	defer live.Close()
	for i, want := range []string{"first result", "second result"} {
		if status, _ := send(t, rp, live, `{"turn":`+string(rune('1'+i))+`}`); status != http.StatusOK {
			t.Fatalf("turn %d refused: %v", i+1, rp.Divergence())
		}
		rec, ok := rp.Tool("call_1")
		if !ok || len(rec.Result) != 1 || rec.Result[0].Text != want {
			t.Errorf("turn %d: call_1 answered with %+v (found %v), want %q", i+1, rec.Result, ok, want)
		}
	}
}

// Traces an earlier Loop wrote (testdata/version1 and version2: written
// by the writers of those versions, every body whole and every event a
// record, then bodies as patches and events gathered) read and replay as
// before: they record neither their configuration nor the ends of their
// steps, and no step of theirs counts as unfinished. Each replays the
// three turns of a run whose provider named both its tool calls call_1.
func TestTracesOfFormatVersionsOneAndTwoStillReplay(t *testing.T) {
	bodies := []string{
		`{"model":"m1","messages":[{"role":"user","content":"look around"}],"stream":true}`,
		`{"model":"m1","messages":[{"role":"user","content":"look around"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"notes.txt\n"}],"stream":true}`,
		`{"model":"m1","messages":[{"role":"user","content":"look around"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"notes.txt\n"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"notes.txt\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"hello"}],"stream":true}`,
	}
	results := []string{"notes.txt\n", "hello", ""}
	for _, version := range []int{1, 2} {
		tr, err := Read(filepath.Join("testdata", fmt.Sprintf("version%d", version)))
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if h := tr.Header(); h.Version != version || tr.Unfinished != "" || tr.Incomplete {
			t.Fatalf("version %d: header %+v, unfinished %q, incomplete %v", version, h, tr.Unfinished, tr.Incomplete)
		}
		rp, err := NewReplayer(tr)
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if len(rp.Steps) != 1 || len(rp.Configs) != 1 || rp.Configs[0] != nil {
			t.Fatalf("version %d: steps %d, configs %q", version, len(rp.Steps), rp.Configs)
		}
		live := NewWriter(Options{Dir: filepath.Join(t.TempDir(), "live")})
		for i, body := range bodies {
			if status, answer := send(t, rp, live, body); status != http.StatusOK || !strings.Contains(answer, "[DONE]") {
				t.Fatalf("version %d, turn %d: %d %q: %v", version, i+1, status, answer, rp.Divergence())
			}
			if results[i] == "" {
				continue
			}
			if rec, ok := rp.Tool("call_1"); !ok || rec.Result[0].Text != results[i] {
				t.Errorf("version %d, turn %d: call_1 answered with %+v", version, i+1, rec.Result)
			}
		}
		live.Close()
		if d := rp.Finish(); d != nil {
			t.Errorf("version %d diverged: %s", version, d.Describe())
		}
	}
}
