package trace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// readEvents reads dir back and returns its event records' bytes.
func readEvents(t *testing.T, dir string) []Record {
	t.Helper()
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for _, r := range tr.Records {
		if r.Type == TypeEvent {
			out = append(out, r)
		}
	}
	return out
}

// readStream is the bytes of every event in dir's trace, in order: what
// the stream delivered, as a reader rebuilds it.
func readStream(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range readEvents(t, dir) {
		b.WriteString(e.Raw)
	}
	return b.String()
}

func segmentText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// A stream's events, one a read as a server sends them, read back byte for
// byte from a few events records, each event a patch of the one before it:
// the trace holds some 15 bytes an event, not the 150 of a line each.
func TestStreamEventsAreRecordedAsPatchesOfTheEventBefore(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	var sent []string
	for i := range 200 {
		ev := fmt.Sprintf(`data: {"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1796135000,"model":"gpt-5","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}`+"\n\n", i)
		sent = append(sent, ev)
		c.Body(1, []byte(ev))
	}
	c.End(1, nil)
	c.Finish(Record{StopReason: "stop"})
	w.Flush()
	got := readEvents(t, w.Dir())
	if len(got) != len(sent) {
		t.Fatalf("%d events read, %d sent", len(got), len(sent))
	}
	for i := range sent {
		if got[i].Raw != sent[i] || got[i].Call != 1 || got[i].Attempt != 1 {
			t.Fatalf("event %d read as %+v, sent %q", i+1, got[i], sent[i])
		}
	}
	text := segmentText(t, w.Dir())
	if !strings.Contains(text, `{"type":"events","t":`) || strings.Contains(text, `{"type":"event",`) {
		t.Fatalf("no events record, or a line an event:\n%s", text)
	}
	if perEvent := len(text) / len(sent); perEvent > 30 {
		t.Errorf("the trace holds %d bytes an event", perEvent)
	}
}

// Each events record reads on its own: its first event is whole. One
// starts at each attempt.
func TestEachEventsRecordStartsWithAWholeEvent(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf([]byte(`{"m":1}`)))
	c.Body(1, []byte("data: {\"a\":1}\n\n"))
	c.End(1, fmt.Errorf("stream broke"))
	c.Request(2, "https://x/v1/chat/completions", nil, provider.BodyOf([]byte(`{"m":1}`)))
	c.Body(1+1, []byte("data: {\"a\":1}\n\ndata: {\"a\":2}\n\n"))
	c.Finish(Record{StopReason: "stop"})
	w.Flush()
	text := segmentText(t, w.Dir())
	for _, want := range []string{
		`"call":1,"attempt":1,"events":[[0,0,0,"data: {\"a\":1}\n\n"]]}`,
		`"call":1,"attempt":2,"events":[[0,0,0,"data: {\"a\":1}\n\n"],[0,11,3,"2"]]}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("trace lacks %s:\n%s", want, text)
		}
	}
	var kinds []string
	tr, _ := Read(w.Dir())
	for _, r := range tr.Records {
		kinds = append(kinds, r.Type)
	}
	if got := strings.Join(kinds, " "); got != "trace call request event error request event event result" {
		t.Errorf("records in order: %s", got)
	}
}

// A stream that stalls is what a trace is for: its events reach the disk
// within the flush delay, though the call neither ends nor fills its
// window, and no one flushes.
func TestAStalledStreamsEventsReachTheDisk(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Body(1, []byte("data: {\"last\":\"words\"}\n\n"))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(segmentTextIfAny(w.Dir()), `\"last\":\"words\"`) {
		if time.Now().After(deadline) {
			t.Fatal("a stalled stream's event never reached the disk")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func segmentTextIfAny(dir string) string {
	data, _ := os.ReadFile(filepath.Join(dir, SegmentName(1)))
	return string(data)
}

// An event that is not valid UTF-8 is recorded as a reader reads it (each
// bad byte U+FFFD), and the events after it still rebuild exactly.
func TestAnEventOfInvalidUTF8LeavesTheNextOnesExact(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	evs := []string{"data: caf\xe9 au lait\n\n", "data: cafe au lait\n\n", "data: café au lait\n\n"}
	for _, ev := range evs {
		c.Body(1, []byte(ev))
	}
	c.Finish(Record{})
	w.Flush()
	got := readEvents(t, w.Dir())
	want := []string{"data: caf\uFFFD au lait\n\n", evs[1], evs[2]}
	for i := range want {
		if i >= len(got) || got[i].Raw != want[i] {
			t.Fatalf("events %+v, want %q", got, want)
		}
	}
}

// A key in an event never reaches the trace, even where the event before
// it held the key's first bytes and a patch would insert only its end.
func TestEventPatchesHoldNoSecret(t *testing.T) {
	const key = "sk-event-secret-445566"
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New(key) }})
	c := w.StartCall(Record{Purpose: PurposeMain})
	for _, ev := range []string{"data: {\"e\":\"sk-event-secret-44\"}\n\n", "data: {\"e\":\"" + key + "\"}\n\n"} {
		c.Body(1, []byte(ev))
	}
	c.Finish(Record{})
	w.Flush()
	text := segmentText(t, w.Dir())
	if strings.Contains(text, key) || strings.Contains(text, "5566") {
		t.Fatalf("a key, or its end, reached the trace:\n%s", text)
	}
	got := readEvents(t, w.Dir())
	if len(got) != 2 || got[1].Raw != "data: {\"e\":\""+Redacted+"\"}\n\n" {
		t.Fatalf("events %+v", got)
	}
}

// An events record whose patches do not fit the events before them is an
// error of the reader, never a crash.
func TestAnEventsRecordThatDoesNotFitIsAnError(t *testing.T) {
	for _, entries := range []string{`[[0,0,0,"a"],[0,2,0,"b"]]`, `[[0,-1,0,"a"]]`, `[[0,0,0]]`, `[[0,0,0,1]]`, `[5]`} {
		dir := filepath.Join(t.TempDir(), "t")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		seg := `{"type":"trace","t":1,"version":2,"segment":1}` + "\n" + `{"type":"events","t":1,"call":1,"attempt":1,"events":` + entries + "}\n"
		if err := os.WriteFile(filepath.Join(dir, SegmentName(1)), []byte(seg), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("events %s read: %v", entries, err)
		}
	}
}

func FuzzEventPatchesRebuildTheEvents(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n"), []byte("data: {\"a\":22}\n\n"), []byte("event: x\r\ndata: é\r\n\r\n"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		dir := filepath.Join(t.TempDir(), "t")
		w := NewWriter(Options{Dir: dir, Logger: testLogger(t)})
		call := w.StartCall(Record{Purpose: PurposeMain})
		all, ends := joinEvents(a, b, c)
		if len(ends) == 0 {
			return
		}
		// Read in pieces that do not follow the events: the record splits
		// them as the reader would.
		for i := 0; i < len(all); i += 3 {
			call.Body(1, all[i:min(i+3, len(all))])
		}
		call.Finish(Record{})
		w.Close()
		got := readEvents(t, dir)
		// The events are the body split at its blank lines, the rest one
		// event of its own.
		var want []string
		for rest := all; len(rest) > 0; {
			i, m := eventEnd(rest)
			n := len(rest)
			if i >= 0 {
				n = i + m
			}
			want = append(want, string(appendValidUTF8(nil, rest[:n])))
			rest = rest[n:]
		}
		if len(got) != len(want) {
			t.Fatalf("%d events read, want %d: %q", len(got), len(want), want)
		}
		for i := range want {
			if got[i].Raw != want[i] {
				t.Fatalf("event %d read as %q, want %q", i+1, got[i].Raw, want[i])
			}
		}
	})
}

// joinEvents joins events, leaving out empty ones, and says where each ends.
func joinEvents(evs ...[]byte) ([]byte, []int) {
	var all []byte
	var ends []int
	for _, ev := range evs {
		if len(ev) == 0 {
			continue
		}
		all = append(all, ev...)
		ends = append(ends, len(all))
	}
	return all, ends
}

// An event larger than a window, read a piece at a time, lands whole; the
// events around it too.
func TestAnEventLargerThanAWindowLandsWhole(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	big := "data: {\"arguments\":\"" + strings.Repeat("0123456789", 10_000) + "\"}\n\n"
	stream := "data: {\"a\":1}\n\n" + big + "data: [DONE]\n\n"
	for i := 0; i < len(stream); i += 1000 {
		c.Body(1, []byte(stream[i:min(i+1000, len(stream))]))
	}
	c.Finish(Record{})
	w.Flush()
	got := readEvents(t, w.Dir())
	if len(got) != 3 || got[0].Raw != "data: {\"a\":1}\n\n" || got[1].Raw != big || got[2].Raw != "data: [DONE]\n\n" {
		t.Fatalf("%d events read", len(got))
	}
}

// The flusher makes records of a call's window while its stream goes on:
// every event lands once, in order.
func TestEventsLandInOrderWhileTheFlusherTakesTheWindow(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			w.Flush()
		}
	}()
	var stream strings.Builder
	for i := range 2000 {
		ev := fmt.Sprintf("data: {\"n\":%d}\n\n", i)
		stream.WriteString(ev)
		// Split across reads, so that the flusher finds unfinished events.
		c.Body(1, []byte(ev[:5]))
		c.Body(1, []byte(ev[5:]))
	}
	<-done
	c.Finish(Record{})
	w.Flush()
	got := readEvents(t, w.Dir())
	var b strings.Builder
	for _, e := range got {
		b.WriteString(e.Raw)
	}
	if len(got) != 2000 || b.String() != stream.String() {
		t.Fatalf("%d events read, their bytes equal to the stream's: %v", len(got), b.String() == stream.String())
	}
}

// An events record whose events each keep the whole event before it would
// rebuild to the square of its size (a line of a megabyte, gigabytes of
// events): a reader refuses a record whose events after the first hold
// more than a writer puts there, so reading stays linear in the file.
func TestAnEventsRecordThatWouldRebuildToFarMoreThanItHoldsIsAnError(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"events","t":1,"call":1,"attempt":1,"events":[[0,0,0,"x"]`)
	for i := 1; i < 20_000; i++ {
		fmt.Fprintf(&b, `,[0,%d,0,"x"]`, i)
	}
	b.WriteString("]}")
	var r Record
	if err := json.Unmarshal([]byte(b.String()), &r); err != nil {
		t.Fatal(err)
	}
	out, err := expandEvents(nil, &r)
	total := 0
	for _, e := range out {
		total += len(e.Raw)
	}
	if err == nil || total > 1<<20 {
		t.Fatalf("a %d-byte record rebuilt to %d bytes of events (error %v)", b.Len(), total, err)
	}
}

// However a stream's reads fall (here one read of many large events that
// mostly repeat each other), the writer's records stay within what a
// reader accepts, and read back exactly.
func TestOneLargeReadOfRepeatingEventsReadsBack(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain})
	pad := strings.Repeat("p", 4000)
	var stream strings.Builder
	for i := range 300 {
		fmt.Fprintf(&stream, "data: {\"pad\":\"%s\",\"n\":%d}\n\n", pad, i)
	}
	c.Body(1, []byte(stream.String()))
	c.End(1, nil)
	c.Finish(Record{})
	w.Flush()
	if readStream(t, w.Dir()) != stream.String() {
		t.Fatal("the events read back are not the stream's bytes")
	}
}
