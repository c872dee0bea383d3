package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/sourcegraph/jsonrpc2"
)

type deltaParams struct {
	SessionID string `json:"sessionId"`
	MessageID string `json:"messageId"`
	Event     string `json:"event"`
	Block     int    `json:"block"`
	Type      string `json:"type"`
	Delta     string `json:"delta"`
}

func quietConn(s *Stream, h jsonrpc2.Handler) *jsonrpc2.Conn {
	return jsonrpc2.NewConn(context.Background(), s, h, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
}

// within fails the test if f does not return in 60s: a guard against
// deadlock, generous enough for a loaded machine.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// A reader that has stopped never blocks WriteObject; deltas merge while
// they wait, and what the reader finally gets is complete and in order.
func TestOutboxNeverBlocksAndMerges(t *testing.T) {
	inR, _ := io.Pipe()
	outR, outW := io.Pipe()
	s := New(inR, outW, Options{Framing: NDJSON, Merger: mergeDeltas})
	conn := quietConn(s, nil)
	defer conn.Close()
	ctx := context.Background()

	const others, deltas = 3000, 20000
	var want0, want1 strings.Builder
	within(t, "WriteObject", func() {
		for i := range others {
			if err := conn.Notify(ctx, "other", map[string]int{"i": i}); err != nil {
				t.Error(err)
				return
			}
		}
		for i := range deltas {
			d := fmt.Sprintf("<%d \"é\"\n>", i)
			want0.WriteString(d)
			conn.Notify(ctx, deltaMethod, deltaParams{"s1", "m1", "delta", 0, "text", d})
		}
		// Neither a request nor a different block may be merged across.
		if _, err := conn.DispatchCall(ctx, "session/request_approval", map[string]string{"a": "b"}); err != nil {
			t.Error(err)
		}
		for i := range deltas {
			d := fmt.Sprint(i, ",")
			want1.WriteString(d)
			conn.Notify(ctx, deltaMethod, deltaParams{"s1", "m1", "delta", 1, "text", d})
		}
		conn.Notify(ctx, deltaMethod, deltaParams{"s1", "m1", "delta", 2, "thinking", "z"})
		conn.Notify(ctx, "last", nil)
	})
	st := s.Stats()
	// The writer holds at most a few batches; everything behind them merged.
	if st.Merged < 2*deltas-6 {
		t.Fatalf("merged %d of %d deltas", st.Merged, 2*deltas)
	}

	lines := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<30)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
	}()
	within(t, "Close", func() { s.Close() })
	got := <-lines

	var text [3]strings.Builder
	next, sawCall, sawLast := 0, false, false
	for _, l := range got {
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad line %q", l)
		}
		switch m.Method {
		case "other":
			var p struct{ I int }
			json.Unmarshal(m.Params, &p)
			if p.I != next || text[0].Len() > 0 {
				t.Fatalf("other %d out of order (want %d)", p.I, next)
			}
			next++
		case deltaMethod:
			var p deltaParams
			if err := json.Unmarshal(m.Params, &p); err != nil || p.SessionID != "s1" || p.MessageID != "m1" || p.Event != "delta" {
				t.Fatalf("bad delta %s", l)
			}
			if p.Block == 0 && sawCall || p.Block == 1 && !sawCall {
				t.Fatalf("delta of block %d on the wrong side of the request", p.Block)
			}
			if p.Block == 2 && p.Type != "thinking" || p.Block != 2 && p.Type != "text" {
				t.Fatalf("type mixed up: %s", l)
			}
			text[p.Block].WriteString(p.Delta)
		case "session/request_approval":
			if m.ID == nil {
				t.Fatal("the request lost its id")
			}
			sawCall = true
		case "last":
			sawLast = true
		default:
			t.Fatalf("unexpected %s", l)
		}
	}
	if next != others || !sawCall || !sawLast {
		t.Fatalf("missing messages: others %d, call %v, last %v", next, sawCall, sawLast)
	}
	if text[0].String() != want0.String() || text[1].String() != want1.String() || text[2].String() != "z" {
		t.Fatal("merged delta text differs from what was sent")
	}
	if want := uint64(others + 2*deltas + 3); uint64(len(got))+st.Merged != want || s.Stats().Written != uint64(len(got)) {
		t.Fatalf("%d lines + %d merges != %d messages (stats %+v)", len(got), st.Merged, want, s.Stats())
	}
}

func outgoingDelta(t *testing.T, p any) *Outgoing {
	t.Helper()
	o, err := newOutgoing(&jsonrpc2.Request{Method: deltaMethod, Notif: true, Params: rawOf(t, p)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func rawOf(t *testing.T, v any) *json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	r := json.RawMessage(b)
	return &r
}

func TestMergeDeltas(t *testing.T) {
	base := deltaParams{"s", "m", "delta", 0, "text", "a"}
	with := func(f func(*deltaParams)) deltaParams { p := base; f(&p); return p }
	for _, tc := range []struct {
		name  string
		next  any
		merge bool
	}{
		{"same block", with(func(p *deltaParams) { p.Delta = "b" }), true},
		{"other session", with(func(p *deltaParams) { p.SessionID = "x" }), false},
		{"other message", with(func(p *deltaParams) { p.MessageID = "x" }), false},
		{"other block", with(func(p *deltaParams) { p.Block = 1 }), false},
		{"other type", with(func(p *deltaParams) { p.Type = "thinking" }), false},
		{"not a delta", with(func(p *deltaParams) { p.Event = "end" }), false},
		{"extra field", map[string]any{"sessionId": "s", "messageId": "m", "event": "delta", "block": 0, "type": "text", "delta": "b", "x": 1}, false},
		{"missing field", map[string]any{"sessionId": "s", "messageId": "m", "event": "delta", "block": 0, "delta": "b"}, false},
		{"delta not a string", map[string]any{"sessionId": "s", "messageId": "m", "event": "delta", "block": 0, "type": "text", "delta": 5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := outgoingDelta(t, base)
			if got := mergeDeltas(prev, outgoingDelta(t, tc.next)); got != tc.merge {
				t.Fatalf("merged = %v", got)
			}
		})
	}
	t.Run("other method", func(t *testing.T) {
		prev := outgoingDelta(t, base)
		next := outgoingDelta(t, base)
		next.Method = "session/tool"
		if mergeDeltas(prev, next) {
			t.Fatal("merged across methods")
		}
	})
	t.Run("text and key order", func(t *testing.T) {
		prev := outgoingDelta(t, base)
		parts := []string{"\"quoted\"", "\n", "é<&>", `\`, "\u2028", ""}
		for _, p := range parts {
			if !mergeDeltas(prev, outgoingDelta(t, with(func(d *deltaParams) { d.Delta = p }))) {
				t.Fatalf("did not merge %q", p)
			}
		}
		body, err := prev.encode()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&jsonrpc2.Request{Method: deltaMethod, Notif: true,
			Params: rawOf(t, with(func(d *deltaParams) { d.Delta = "a" + strings.Join(parts, "") }))})
		want = jsonenc.UnescapeHTML(want) // frames keep <, > and & as they are
		if string(body) != string(want) {
			t.Fatalf("got  %s\nwant %s", body, want)
		}
	})
}

func TestMergerIsPluggable(t *testing.T) {
	inR, _ := io.Pipe()
	outR, outW := io.Pipe()
	var calls []string
	// Auto framing and no input: the writer takes nothing until Close tells
	// it the framing (NDJSON), so every message below is queued, and seen
	// by the merger, before any is written, however the goroutines run.
	s := New(inR, outW, Options{Merger: func(prev, next *Outgoing) bool {
		calls = append(calls, prev.Method+"<-"+next.Method)
		return next.Method == "drop-me"
	}})
	for _, m := range []string{"first", "second", "drop-me", "third"} {
		if err := s.WriteObject(&jsonrpc2.Request{Method: m, Notif: true}); err != nil {
			t.Fatal(err)
		}
	}
	// A request and a response are never shown to the merger.
	s.WriteObject(&jsonrpc2.Request{Method: "drop-me", ID: jsonrpc2.ID{Num: 1}})
	s.WriteObject(&jsonrpc2.Response{ID: jsonrpc2.ID{Num: 1}, Result: rawOf(t, 1)})
	go s.Close()
	b, _ := io.ReadAll(outR)
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m struct {
			Method string
			ID     *int
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, fmt.Sprint(m.Method, " ", m.ID != nil))
	}
	if want := []string{"first false", "second false", "third false", "drop-me true", " true"}; !slices.Equal(got, want) {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	if want := []string{"first<-second", "second<-drop-me", "second<-third"}; !slices.Equal(calls, want) {
		t.Fatalf("merger calls %q, want %q", calls, want)
	}
}

func TestCloseFlushesAndTimesOut(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		inR, _ := io.Pipe()
		outR, outW := io.Pipe()
		s := New(inR, outW, Options{Framing: LSP})
		for i := range 100 {
			s.WriteObject(&jsonrpc2.Request{Method: fmt.Sprint("m", i), Notif: true})
		}
		done := make(chan []byte)
		go func() { b, _ := io.ReadAll(outR); done <- b }()
		within(t, "Close", func() { s.Close() })
		b := <-done
		if n := strings.Count(string(b), "Content-Length: "); n != 100 || !strings.HasSuffix(string(b), `"method":"m99"}`) {
			t.Fatalf("%d frames after Close", n)
		}
		if err := s.WriteObject(&jsonrpc2.Request{Method: "late", Notif: true}); !errors.Is(err, ErrClosed) {
			t.Fatalf("write after Close: %v", err)
		}
	})
	t.Run("reader gone", func(t *testing.T) {
		inR, _ := io.Pipe()
		_, outW := io.Pipe()
		s := New(inR, outW, Options{Framing: NDJSON, CloseTimeout: 20 * time.Millisecond})
		s.WriteObject(&jsonrpc2.Request{Method: "stuck", Notif: true})
		within(t, "Close", func() { s.Close() })
		within(t, "writer exit", func() { <-s.writerDone })
	})
	t.Run("write error", func(t *testing.T) {
		inR, _ := io.Pipe()
		outR, outW := io.Pipe()
		outR.Close()
		s := New(inR, outW, Options{Framing: NDJSON})
		s.WriteObject(&jsonrpc2.Request{Method: "a", Notif: true})
		within(t, "writer exit", func() { <-s.writerDone })
		if err := s.WriteObject(&jsonrpc2.Request{Method: "b", Notif: true}); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write after output failed: %v", err)
		}
	})
}

// recorder is an ObjectStream that keeps what jsonrpc2.Conn writes.
type recorder struct {
	objs chan any
	in   chan []byte
}

func (r *recorder) WriteObject(v any) error { r.objs <- v; return nil }
func (r *recorder) ReadObject(v any) error {
	b, ok := <-r.in
	if !ok {
		return io.EOF
	}
	return json.Unmarshal(b, v)
}
func (r *recorder) Close() error { return nil }

// The fast path that reads jsonrpc2's private message wrapper must give the
// same bytes as json.Marshal of it, for every kind of message.
func TestUnwrapMatchesConn(t *testing.T) {
	r := &recorder{objs: make(chan any, 10), in: make(chan []byte, 1)}
	conn := jsonrpc2.NewConn(context.Background(), r, jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == "fail" {
			return nil, NewError(InvalidParams, "invalid_params", "bad", map[string]any{"field": "x"})
		}
		return map[string]string{"ok": "<yes>"}, nil
	}), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	defer conn.Close()
	ctx := context.Background()
	conn.Notify(ctx, "note", map[string]any{"b": 1, "a": "<&>"})
	conn.Notify(ctx, "bare", nil)
	conn.DispatchCall(ctx, "ask", []int{1, 2})
	conn.DispatchCall(ctx, "ask", nil, jsonrpc2.PickID(jsonrpc2.ID{Str: "s-1", IsString: true}))
	conn.Notify(ctx, "meta", 1, jsonrpc2.Meta(map[string]int{"m": 1}))
	r.in <- []byte(`{"jsonrpc":"2.0","id":7,"method":"work"}`)
	r.in <- []byte(`{"jsonrpc":"2.0","id":"z","method":"fail"}`)
	for range 7 {
		var obj any
		within(t, "conn write", func() { obj = <-r.objs })
		escaped, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		// What json.Marshal gives, less its HTML escaping, which frames
		// never have.
		want := jsonenc.UnescapeHTML(escaped)
		if _, _, fromConn, ok := unwrapJSONRPC2(obj); !ok || !fromConn {
			t.Fatalf("%T not unwrapped: %s", obj, want)
		}
		o, err := newOutgoing(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := o.encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("fast path gave %s\njson.Marshal  %s", got, want)
		}
		// The generic path agrees too.
		o2, err := fromBody(escaped)
		if err != nil {
			t.Fatal(err)
		}
		if got2, _ := o2.encode(); string(got2) != string(want) || o2.replyKey != o.replyKey {
			t.Errorf("fromBody gave %s (reply %q), want %s (reply %q)", got2, o2.replyKey, want, o.replyKey)
		}
	}
}

func TestNewError(t *testing.T) {
	e := NewError(InvalidParams, "invalid_params", "bad field", map[string]any{"field": "text", "code": "ignored"})
	b, _ := json.Marshal(e)
	if string(b) != `{"code":-32602,"message":"bad field","data":{"code":"invalid_params","field":"text"}}` {
		t.Fatalf("got %s", b)
	}
	e = NewError(Internal, "storage_error", "disk", map[string]any{"bad": make(chan int)})
	if b, _ = json.Marshal(e); string(b) != `{"code":-32603,"message":"disk","data":{"code":"storage_error"}}` {
		t.Fatalf("got %s", b)
	}
}

// Tool output (session/tool progress) merges like message deltas; other
// tool events never do.
func TestMergeToolProgress(t *testing.T) {
	progress := func(callID, event, text string) *Outgoing {
		o, err := newOutgoing(&jsonrpc2.Request{Method: progressMethod, Notif: true, Params: rawOf(t, map[string]any{
			"sessionId": "s", "toolCallId": callID, "name": "bash", "event": event, "progress": text,
		})})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	prev := progress("c1", "progress", "line 1\n")
	if !mergeDeltas(prev, progress("c1", "progress", "line 2\n")) {
		t.Fatal("adjacent progress of one call did not merge")
	}
	if mergeDeltas(prev, progress("c2", "progress", "x")) {
		t.Fatal("progress of another call merged")
	}
	if mergeDeltas(prev, progress("c1", "end", "")) {
		t.Fatal("an end event merged into progress")
	}
	body, err := prev.encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"progress":"line 1\nline 2\n"`) {
		t.Fatalf("merged body: %s", body)
	}
}
