package trace

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// chatBody is a chat request of n history messages: the history grows in
// the middle, the tools stay at the end, as the providers write them.
func chatBody(n int, extra string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"system","content":"be brief"}`)
	for i := range n {
		fmt.Fprintf(&b, `,{"role":"user","content":"step %d of the work%s"}`, i, extra)
	}
	b.WriteString(`],"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],"stream":true}`)
	return []byte(b.String())
}

func requestLines(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, `{"type":"request"`) {
				out = append(out, l)
			}
		}
	}
	return out
}

// readBodies reads dir back and rebuilds every request body, in order.
func readBodies(t *testing.T, dir string) ([][]byte, []error) {
	t.Helper()
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	bodies := tr.Bodies()
	var out [][]byte
	var errs []error
	for i, r := range tr.Records {
		if r.Type == TypeRequest {
			b, err := bodies.Of(i)
			out, errs = append(out, b), append(errs, err)
		}
	}
	return out, errs
}

func TestEachRequestBodyIsAPatchOfThePreviousOneOfItsPurpose(t *testing.T) {
	w := newTestWriter(t, Options{})
	h := http.Header{"Content-Type": {"application/json"}}
	var sent [][]byte
	for i := range 60 {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		body := chatBody(i+1, "")
		c.Request(1, "https://api.example.com/v1/chat/completions", h, provider.BodyOf(body))
		sent = append(sent, body)
		if i == 2 {
			// A title call between two main turns: its body is of another
			// shape, and the next main body is still a patch of the last
			// main one.
			tc := w.StartCall(Record{Purpose: PurposeTitle, API: "openai"})
			title := []byte(`{"model":"m","messages":[{"role":"user","content":"name this"}],"stream":true}`)
			tc.Request(1, "https://api.example.com/v1/chat/completions", h, provider.BodyOf(title))
			sent = append(sent, title)
		}
	}
	w.Flush()
	got, errs := readBodies(t, w.Dir())
	if len(got) != len(sent) {
		t.Fatalf("%d requests read, %d sent", len(got), len(sent))
	}
	for i := range sent {
		if errs[i] != nil || !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("request %d rebuilt as %q (%v), sent %q", i+1, got[i], errs[i], sent[i])
		}
	}
	lines := requestLines(t, w.Dir())
	patches, written, total := 0, 0, 0
	for i, l := range lines {
		if strings.Contains(l, `"bodyPatch":`) {
			patches++
		}
		written += len(l)
		total += len(sent[i])
	}
	// The first main body, the title's and those at which the patches
	// since the last whole one add up to it (at doubling sizes) are whole;
	// the rest are patches.
	if patches < len(lines)-8 {
		t.Errorf("%d of %d requests are patches:\n%s", patches, len(lines), strings.Join(lines, "\n"))
	}
	if written*4 > total {
		t.Errorf("request lines hold %d bytes for %d bytes of bodies: the trace grows with the square of the session", written, total)
	}
	if !strings.Contains(lines[4], `"bodyPatch":{"base":3,`) {
		t.Errorf("the main request after the title is not a patch of the main one before it: %s", lines[4])
	}
}

// A retried attempt sends the same body: it is a patch that keeps it all.
func TestARetriedAttemptIsAPatchThatKeepsTheWholeBody(t *testing.T) {
	w := newTestWriter(t, Options{})
	c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
	body := chatBody(5, "")
	c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(body))
	c.End(1, fmt.Errorf("connection reset"))
	c.Request(2, "https://x/v1/chat/completions", nil, provider.BodyOf(body))
	w.Flush()
	lines := requestLines(t, w.Dir())
	want := fmt.Sprintf(`"bodyPatch":{"base":1,"prefix":%d,"suffix":0,"insert":""}}`, len(body))
	if len(lines) != 2 || !strings.HasSuffix(lines[1], want) {
		t.Fatalf("request lines:\n%s\nwant the second to end %s", strings.Join(lines, "\n"), want)
	}
	got, errs := readBodies(t, w.Dir())
	if errs[1] != nil || !bytes.Equal(got[1], body) {
		t.Fatalf("retry rebuilt as %q (%v)", got[1], errs[1])
	}
}

// Patches stay proportional to what each request adds: once they add up
// to the size of the body, the next body is whole again, so that a reader
// of a trace whose oldest segments are gone soon finds one to start from.
func TestABodyIsWholeAgainOncePatchesAddUpToIt(t *testing.T) {
	w := newTestWriter(t, Options{})
	big := strings.Repeat("x", 2000)
	whole := 0
	for i := range 60 {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(chatBody(i+1, big)))
	}
	w.Flush()
	for _, l := range requestLines(t, w.Dir()) {
		if strings.Contains(l, `"body":{`) {
			whole++
		}
	}
	// Each request adds about 2 KB to a body that reaches 120 KB: a body
	// is whole at the first request, then after patches add up to it.
	if whole < 3 || whole > 12 {
		t.Fatalf("%d whole bodies in 60 requests", whole)
	}
	_, errs := readBodies(t, w.Dir())
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
}

// A segment that outlives the ones before it must be readable: the first
// body after a segment closed is whole.
func TestTheFirstBodyAfterASegmentClosesIsWhole(t *testing.T) {
	w := newTestWriter(t, Options{MaxBytes: 64 << 10})
	var sent [][]byte
	for i := range 40 {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		body := chatBody(i+1, strings.Repeat("y", 300))
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(body))
		sent = append(sent, body)
		c.Body(1, []byte(strings.Repeat("data: {\"choices\":[]}\n\n", 40)))
		w.Flush() // each call lands before the next is encoded, as between real prompts
	}
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Truncated {
		t.Fatalf("the bound dropped no segment: %v", tr.Segments)
	}
	got, errs := readBodies(t, w.Dir())
	// Every body after the first whole one rebuilds; one before it may
	// not, its base gone with an older segment.
	seenWhole := false
	lines := requestLines(t, w.Dir())
	for i, l := range lines {
		seenWhole = seenWhole || strings.Contains(l, `"body":{`)
		if !seenWhole {
			continue
		}
		want := sent[len(sent)-len(lines)+i]
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Fatalf("request %d of the surviving segments: %v", i+1, errs[i])
		}
	}
	// A body encoded before the segment closed may land first in the
	// next one, its base left behind; the body after it is whole.
	if !strings.Contains(lines[0], `"body":{`) && !strings.Contains(lines[1], `"body":{`) {
		t.Errorf("neither of the oldest surviving segment's first two bodies is whole:\n%s\n%s", lines[0], lines[1])
	}
}

// A key in the part of a body a patch carries, or across its edge (the
// bytes before it shared with the previous body), never reaches the trace,
// nor a body rebuilt from it: that is the body scrubbed.
func TestPatchedBodiesHoldNoSecret(t *testing.T) {
	// The key ends in letters, so that no timestamp or count can hold its end.
	const key = "sk-patch-secret-77qzxv"
	w := newTestWriter(t, Options{Secrets: func() *redact.Set { return redact.New(key) }})
	bodies := [][]byte{
		chatBody(3, ""),
		chatBody(4, " "+key), // the key in what is added
		chatBody(5, " "+key),
		// Then the key's first bytes, not a secret on their own, and the
		// key whole where they were: the patch inserts only its end.
		bytes.Replace(chatBody(5, " "+key), []byte(`step 0 of`), []byte(`step 0 sk-patch-secret-77 of`), 1),
		bytes.Replace(chatBody(5, " "+key), []byte(`step 0 of`), []byte(`step 0 `+key+` of`), 1),
		chatBody(6, ""),
		// The same with no other key about.
		bytes.Replace(chatBody(6, ""), []byte(`step 0 of`), []byte(`step 0 sk-patch-secret-77 of`), 1),
		bytes.Replace(chatBody(6, ""), []byte(`step 0 of`), []byte(`step 0 `+key+` of`), 1),
	}
	for _, b := range bodies {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(b))
	}
	w.Flush()
	raw, _ := os.ReadFile(filepath.Join(w.Dir(), SegmentName(1)))
	if bytes.Contains(raw, []byte(key)) || bytes.Contains(raw, []byte("qzxv")) {
		t.Fatalf("a key, or its end, reached the trace:\n%s", raw)
	}
	got, errs := readBodies(t, w.Dir())
	for i, b := range bodies {
		want := bytes.ReplaceAll(b, []byte(key), []byte(Redacted))
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Fatalf("request %d rebuilt as\n%s (%v)\nwant\n%s", i+1, got[i], errs[i], want)
		}
	}
	if n := strings.Count(string(raw), `"bodyPatch"`); n < 6 {
		t.Errorf("%d of %d bodies are patches", n, len(bodies))
	}
}

// Two bodies that differ inside a character (é and è share their first
// byte) are patched at the character's start: what a patch inserts is
// whole characters, which a JSON string holds exactly.
func TestAPatchNeverSplitsACharacter(t *testing.T) {
	w := newTestWriter(t, Options{})
	bodies := [][]byte{[]byte(`{"messages":["café au lait, caffè latte"]}`), []byte(`{"messages":["cafè au lait, caffé latte"]}`)}
	for _, b := range bodies {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(b))
	}
	w.Flush()
	got, errs := readBodies(t, w.Dir())
	for i, b := range bodies {
		if errs[i] != nil || !bytes.Equal(got[i], b) {
			t.Fatalf("request %d rebuilt as %q (%v), sent %q", i+1, got[i], errs[i], b)
		}
	}
}

// A patch whose base the trace does not hold, or that does not fit it, is
// an error for that body, not a crash, and the replay refuses the trace.
func TestABodyPatchWithoutItsBaseIsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	seg := `{"type":"trace","t":1,"version":2,"segment":1}
{"type":"prompt","t":1,"requestId":"r1","input":{"text":"hi"}}
{"type":"call","t":1,"call":1,"purpose":"main","provider":"oa","api":"openai","model":"m"}
{"type":"request","t":1,"call":1,"attempt":1,"method":"POST","url":"http://x","body":{"m":1}}
{"type":"call","t":1,"call":2,"purpose":"main","provider":"oa","api":"openai","model":"m"}
{"type":"request","t":1,"call":2,"attempt":1,"method":"POST","url":"http://x","bodyPatch":{"base":1,"prefix":7,"suffix":9,"insert":"x"}}
{"type":"call","t":1,"call":3,"purpose":"main","provider":"oa","api":"openai","model":"m"}
{"type":"request","t":1,"call":3,"attempt":1,"method":"POST","url":"http://x","bodyPatch":{"base":9,"prefix":1,"suffix":1,"insert":"x"}}
{"type":"call","t":1,"call":4,"purpose":"main","provider":"oa","api":"openai","model":"m"}
{"type":"request","t":1,"call":4,"attempt":1,"method":"POST","url":"http://x","bodyPatch":{"base":1,"prefix":-1,"suffix":1,"insert":"x"}}
`
	if err := os.WriteFile(filepath.Join(dir, SegmentName(1)), []byte(seg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, errs := readBodies(t, dir)
	if errs[0] != nil || string(got[0]) != `{"m":1}` {
		t.Fatalf("whole body %q (%v)", got[0], errs[0])
	}
	for i, want := range []string{"keeps 7 and 9 bytes of a 7-byte body", "call 9's, which the trace no longer holds", "keeps -1 and 1 bytes"} {
		if err := errs[i+1]; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("request %d: %v, want an error saying %q", i+2, err, want)
		}
	}
	tr, _ := Read(dir)
	if _, err := NewReplayer(tr); err == nil || !strings.Contains(err.Error(), "cannot be replayed") {
		t.Fatalf("a trace with a body that does not rebuild was accepted for replay: %v", err)
	}
}

// Bodies may be asked for in any order: an older one is rebuilt again from
// the start.
func TestBodiesRebuildInAnyOrder(t *testing.T) {
	w := newTestWriter(t, Options{})
	var sent [][]byte
	for i := range 12 {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		sent = append(sent, chatBody(i+1, ""))
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf(sent[i]))
	}
	w.Flush()
	tr, _ := Read(w.Dir())
	var idx []int
	for i, r := range tr.Records {
		if r.Type == TypeRequest {
			idx = append(idx, i)
		}
	}
	b := tr.Bodies()
	for _, k := range []int{11, 0, 5, 4, 11, 10, 1} {
		got, err := b.Of(idx[k])
		if err != nil || !bytes.Equal(got, sent[k]) {
			t.Fatalf("request %d rebuilt as %q (%v)", k+1, got, err)
		}
	}
	if _, err := b.Of(0); err == nil {
		t.Fatal("the trace record was rebuilt as a request")
	}
}

func FuzzBodyPatchRebuildsTheBody(f *testing.F) {
	f.Add([]byte(`{"messages":["a","b"],"tools":[]}`), []byte(`{"messages":["a","b","c"],"tools":[]}`))
	f.Add([]byte(`{"m":"café"}`), []byte(`{"m":"cafè"}`))
	f.Add([]byte(`{}`), []byte(`{"m":1}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		prefix, suffix := commonEnds(a, b)
		if prefix+suffix > min(len(a), len(b)) {
			t.Fatalf("prefix %d + suffix %d exceed %d/%d bytes", prefix, suffix, len(a), len(b))
		}
		insert := b[prefix : len(b)-suffix]
		if utf8.Valid(b) && !utf8.Valid(insert) {
			t.Fatalf("the patch of valid UTF-8 splits a character: %q", insert)
		}
		p := BodyPatch{Prefix: prefix, Suffix: suffix, Insert: string(insert)}
		got, err := p.apply(a)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("rebuilt %q (%v), want %q", got, err, b)
		}
	})
}

// Calls of one purpose may overlap (a background title and one the user
// asked for): however their requests interleave, each patch lands after
// the body it is a patch of, and every body rebuilds.
func TestOverlappingCallsOfOnePurposeRebuildEveryBody(t *testing.T) {
	w := newTestWriter(t, Options{})
	const perCall = 300
	var mu sync.Mutex
	sent := map[int][]byte{}
	done := make(chan struct{})
	for g := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range perCall {
				c := w.StartCall(Record{Purpose: PurposeTitle})
				body := chatBody(i%20+1, fmt.Sprintf(" g%d", g))
				mu.Lock()
				sent[c.Number()] = body
				mu.Unlock()
				c.Request(1, "https://api.example.com/v1/chat/completions", http.Header{}, provider.BodyOf(body))
				c.Finish(Record{})
			}
		}()
	}
	<-done
	<-done
	w.Flush()
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	bodies := tr.Bodies()
	n := 0
	for i, r := range tr.Records {
		if r.Type != TypeRequest {
			continue
		}
		n++
		b, err := bodies.Of(i)
		if err != nil {
			t.Fatalf("request of call %d: %v", r.Call, err)
		}
		if !bytes.Equal(b, sent[r.Call]) {
			t.Fatalf("request of call %d rebuilds to other bytes than were sent", r.Call)
		}
	}
	if n != 2*perCall {
		t.Fatalf("%d requests read, %d sent", n, 2*perCall)
	}
}

// A request lost to a failing disk is no base: the first body recorded
// after records were lost is whole, so the trace's bodies rebuild again
// from there on, not from the next whole body the doubling rule makes.
func TestTheFirstBodyAfterLostRecordsIsWhole(t *testing.T) {
	fsys := &failingFS{}
	w := newTestWriter(t, Options{FS: fsys})
	send := func(n int) []byte {
		c := w.StartCall(Record{Purpose: PurposeMain})
		body := chatBody(n, "")
		c.Request(1, "https://api.example.com/v1/chat/completions", http.Header{}, provider.BodyOf(body))
		c.Finish(Record{})
		w.Flush()
		return body
	}
	send(30)
	fsys.broken.Store(true)
	send(31) // lost
	fsys.broken.Store(false)
	want := send(32)
	bodies, errs := readBodies(t, w.Dir())
	if len(bodies) != 2 {
		t.Fatalf("%d requests read, want the first and the last", len(bodies))
	}
	if errs[1] != nil || !bytes.Equal(bodies[1], want) {
		t.Fatalf("the body after the lost records does not rebuild: %v", errs[1])
	}
}

// A key the configuration names only after a body was recorded (a reload
// while its line waited for the disk) is scrubbed from that line as it is
// written: the next body, patched against the one the trace holds, still
// rebuilds to the bytes sent, the key redacted.
func TestABodyAfterTheKeysChangedRebuildsFromTheBodyAsWritten(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	var mu sync.Mutex
	var secrets *redact.Set
	w := newTestWriter(t, Options{Secrets: func() *redact.Set {
		mu.Lock()
		defer mu.Unlock()
		return secrets
	}})
	first := []byte(`{"messages":[{"role":"user","content":"my key is ` + key + `"}` + strings.Repeat(`,{"role":"user","content":"more work"}`, 40) + `],"stream":true}`)
	c := w.StartCall(Record{Purpose: PurposeMain})
	c.Request(1, "https://api.example.com/v1/chat/completions", http.Header{}, provider.BodyOf(first))
	c.Finish(Record{})
	mu.Lock()
	secrets = redact.New(key) // the reload, before the flusher wrote the line
	mu.Unlock()
	w.Flush()
	second := bytes.Replace(first, []byte(`],"stream"`), []byte(`,{"role":"user","content":"and the tests"}],"stream"`), 1)
	c = w.StartCall(Record{Purpose: PurposeMain})
	c.Request(1, "https://api.example.com/v1/chat/completions", http.Header{}, provider.BodyOf(second))
	c.Finish(Record{})
	w.Flush()
	if strings.Contains(segmentText(t, w.Dir()), key) {
		t.Fatal("the key reached the trace")
	}
	bodies, errs := readBodies(t, w.Dir())
	want := bytes.ReplaceAll(second, []byte(key), []byte(Redacted))
	if len(bodies) != 2 || errs[1] != nil || !bytes.Equal(bodies[1], want) {
		t.Fatalf("the second body does not rebuild to what was sent, redacted (%v)", errs)
	}
}

// A body that is not a JSON object, first of its purpose, is kept as text
// and the next one of the purpose is whole.
func TestATextBodyFirstOfItsPurposeIsKeptAsText(t *testing.T) {
	w := newTestWriter(t, Options{})
	for _, b := range []string{"not json", `{"m":1}`} {
		c := w.StartCall(Record{Purpose: PurposeTitle, API: "openai"})
		c.Request(1, "https://x/v1/chat/completions", nil, provider.BodyOf([]byte(b)))
	}
	w.Flush()
	got, errs := readBodies(t, w.Dir())
	if len(got) != 2 || string(got[0]) != "not json" || string(got[1]) != `{"m":1}` || errs[0] != nil || errs[1] != nil {
		t.Fatalf("bodies %q (%v)", got, errs)
	}
}

// A long body (the history of a long session, a 50 MB prompt) is patched
// like a short one and rebuilds exactly, but what its purpose keeps of it
// for the next patch is sums of its blocks, not a copy of it: the copy
// stayed in memory beside the history for as long as the session was
// open.
func TestALongBodyIsPatchedWithoutKeepingACopyOfIt(t *testing.T) {
	w := newTestWriter(t, Options{})
	h := http.Header{"Content-Type": {"application/json"}}
	extra := strings.Repeat(" and é ", 200)
	var sent [][]byte
	for i := range 4 {
		c := w.StartCall(Record{Purpose: PurposeMain, API: "openai"})
		body := chatBody(1000+i, extra) // about 1.5 MB
		c.Request(1, "https://api.example.com/v1/chat/completions", h, provider.BodyOf(body))
		sent = append(sent, body)
	}
	w.mu.Lock()
	head := w.heads[PurposeMain]
	w.mu.Unlock()
	if head.body != nil || head.sums == nil || len(head.sums.front)*8*2 > len(sent[3])/32 {
		t.Errorf("the head of a %d-byte body keeps %d bytes of it and %v", len(sent[3]), len(head.body), head.sums != nil)
	}
	w.Flush()
	got, errs := readBodies(t, w.Dir())
	for i := range sent {
		if errs[i] != nil || !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("request %d rebuilt as %d bytes (%v), sent %d", i+1, len(got[i]), errs[i], len(sent[i]))
		}
	}
	lines := requestLines(t, w.Dir())
	for i, l := range lines[1:] {
		if !strings.Contains(l, `"bodyPatch":`) || len(l) > 4*sumBlock+len(sent[i+1])-len(sent[i])+1000 {
			t.Errorf("request %d is %d bytes, not a patch of about what it adds", i+2, len(l))
		}
	}
}
