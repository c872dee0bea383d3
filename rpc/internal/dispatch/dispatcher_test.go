package dispatch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/textcheck"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// reply is one answer the peer read.
type reply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

// peer is a client talking NDJSON to a dispatcher behind the real
// transport (wire.Stream and jsonrpc2.Conn), as both dialects are served.
type peer struct {
	t       *testing.T
	in      *io.PipeWriter
	conn    *jsonrpc2.Conn
	mu      sync.Mutex
	replies map[int]reply
	arrived chan struct{} // poked after every reply read
}

func connect(t *testing.T, d *dispatch.Dispatcher) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stream := wire.New(inR, outW, wire.Options{Framing: wire.NDJSON})
	p := &peer{t: t, in: inW, replies: map[int]reply{}, arrived: make(chan struct{}, 1)}
	p.conn = jsonrpc2.NewConn(context.Background(), stream, d, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var r reply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("bad frame %q", sc.Text())
				continue
			}
			p.mu.Lock()
			p.replies[r.ID] = r
			p.mu.Unlock()
			select {
			case p.arrived <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		<-p.conn.DisconnectNotify()
		stream.Close()
		<-done
	})
	return p
}

func (p *peer) send(id int, method string, params string) {
	p.t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	if _, err := io.WriteString(p.in, line); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) notify(method string, params string) {
	p.t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`+"\n", method, params)
	if _, err := io.WriteString(p.in, line); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns the reply to id, waiting for it as long as it takes.
func (p *peer) wait(id int) reply {
	for {
		p.mu.Lock()
		r, ok := p.replies[id]
		p.mu.Unlock()
		if ok {
			return r
		}
		<-p.arrived
	}
}

// has reports whether the reply to id has been read.
func (p *peer) has(id int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.replies[id]
	return ok
}

func errorCode(r reply) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Data.Code
}

type words struct{}

func (words) TypeError(te *json.UnmarshalTypeError) string {
	return te.Field + " must be a " + te.Type.Kind().String()
}
func (words) UnicodeCode(iv *textcheck.Invalid) engine.Code {
	if iv.Top() == "files" {
		return engine.CodeInvalidTextFiles
	}
	return engine.CodeInvalidParams
}

// Inline halves run on the read loop in the order the requests were read,
// so each sees the effects of the ones before it.
func TestInlineHandlersRunInRequestOrder(t *testing.T) {
	var order []int // written on the read loop only
	d := dispatch.New(dispatch.Dialect{Methods: map[string]dispatch.Method{
		"step": {Handle: func(c *dispatch.Call) (any, error) {
			var p struct{ N int }
			if err := dispatch.Decode(c.Params, &p, words{}); err != nil {
				return nil, err
			}
			order = append(order, p.N)
			return map[string]int{"seen": len(order)}, nil
		}},
		// A deferred half in between does not let later inline halves
		// overtake earlier ones.
		"later": {Handle: func(c *dispatch.Call) (any, error) {
			n := len(order)
			return dispatch.Later(func(context.Context) (any, error) { return map[string]int{"seen": n}, nil })
		}},
	}})
	p := connect(t, d)
	const n = 200
	for i := 1; i <= n; i++ {
		if i%10 == 0 {
			p.send(i, "later", `{}`)
			continue
		}
		p.send(i, "step", fmt.Sprintf(`{"n":%d}`, i))
	}
	for i := 1; i <= n; i++ {
		r := p.wait(i)
		var res struct{ Seen int }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
			t.Fatalf("reply %d: %+v", i, r)
		}
		// Requests 1..i hold i - i/10 steps (every tenth is "later").
		if want := i - i/10; res.Seen != want {
			t.Fatalf("request %d saw %d steps before it, want %d", i, res.Seen, want)
		}
	}
	for i, got := range order {
		if i > 0 && got <= order[i-1] {
			t.Fatalf("inline halves ran out of order: %v", order)
		}
	}
}

// A deferred half runs off the read loop: requests read after it are
// answered while it waits, and its own reply comes when it returns.
func TestDeferredRepliesComeWhenTheDeferredHalfReturns(t *testing.T) {
	release := make(chan struct{})
	d := dispatch.New(dispatch.Dialect{Methods: map[string]dispatch.Method{
		"slow": {Handle: func(*dispatch.Call) (any, error) {
			return dispatch.Later(func(context.Context) (any, error) {
				<-release
				return map[string]string{"slow": "done"}, nil
			})
		}},
		"fast": {Handle: func(*dispatch.Call) (any, error) { return nil, nil }},
	}})
	p := connect(t, d)
	p.send(1, "slow", `{}`)
	p.send(2, "fast", `{}`)
	if r := p.wait(2); string(r.Result) != `{}` {
		t.Fatalf("fast: %+v", r)
	}
	if p.has(1) {
		t.Fatal("slow was answered before its deferred half returned")
	}
	close(release)
	if r := p.wait(1); string(r.Result) != `{"slow":"done"}` {
		t.Fatalf("slow: %s", r.Result)
	}
}

// A panic in either half is an internal_error reply; the connection stays
// up and serves the next request.
func TestPanicRepliesInternalErrorAndTheConnectionStaysUp(t *testing.T) {
	d := dispatch.New(dispatch.Dialect{
		Methods: map[string]dispatch.Method{
			"inline": {Handle: func(*dispatch.Call) (any, error) { panic("boom") }},
			"deferred": {Handle: func(*dispatch.Call) (any, error) {
				return dispatch.Later(func(context.Context) (any, error) { panic("later boom") })
			}},
			"ok": {Handle: func(*dispatch.Call) (any, error) { return "fine", nil }},
		},
		Notifications: map[string]func(*json.RawMessage){
			"crash": func(*json.RawMessage) { panic("notification boom") },
		},
	})
	p := connect(t, d)
	p.send(1, "inline", `{}`)
	p.send(2, "deferred", `{}`)
	p.notify("crash", `{}`)
	p.send(3, "ok", `{}`)
	for id, msg := range map[int]string{1: "internal error: boom", 2: "internal error: later boom"} {
		r := p.wait(id)
		if errorCode(r) != string(engine.CodeInternal) || r.Error.Code != wire.Internal || r.Error.Message != msg {
			t.Fatalf("reply %d: %+v", id, r.Error)
		}
	}
	if r := p.wait(3); string(r.Result) != `"fine"` {
		t.Fatalf("after the panics: %+v", r)
	}
}

// Shutdown: Close refuses new deferred halves (busy) while inline ones
// still run, and Wait returns only once every deferred half already
// started has replied, even while the read loop keeps dispatching.
func TestWaitAtShutdownCoversEveryDeferredHalf(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var finished bool
	var mu sync.Mutex
	d := dispatch.New(dispatch.Dialect{Methods: map[string]dispatch.Method{
		"slow": {Handle: func(*dispatch.Call) (any, error) {
			return dispatch.Later(func(context.Context) (any, error) {
				close(started)
				<-release
				mu.Lock()
				finished = true
				mu.Unlock()
				return "slow", nil
			})
		}},
		"deferred": {Handle: func(*dispatch.Call) (any, error) {
			return dispatch.Later(func(context.Context) (any, error) { return "ran", nil })
		}},
		"inline": {Handle: func(*dispatch.Call) (any, error) { return "inline", nil }},
	}})
	p := connect(t, d)
	p.send(1, "slow", `{}`)
	<-started
	d.Close()
	waited := make(chan struct{})
	go func() {
		d.Wait()
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			t.Error("Wait returned while a deferred half was running")
		}
		close(waited)
	}()
	p.send(2, "deferred", `{}`)
	p.send(3, "inline", `{}`)
	if r := p.wait(2); errorCode(r) != string(engine.CodeBusy) || r.Error.Message != "the server is shutting down" {
		t.Fatalf("deferred after Close: %+v", r)
	}
	if r := p.wait(3); string(r.Result) != `"inline"` {
		t.Fatalf("inline after Close: %+v", r)
	}
	close(release)
	<-waited
	if r := p.wait(1); string(r.Result) != `"slow"` {
		t.Fatalf("slow: %+v", r)
	}
}

// The dispatcher's own refusals: an unknown method, a method's Admit, and
// params over the cap for bounded methods only.
func TestRefusalsBeforeTheHandler(t *testing.T) {
	ran := 0
	count := func(*dispatch.Call) (any, error) { ran++; return nil, nil }
	d := dispatch.New(dispatch.Dialect{Methods: map[string]dispatch.Method{
		"closed":  {Handle: count, Admit: func() error { return &engine.Error{Code: engine.CodeBusy, Message: "not now"} }},
		"bounded": {Handle: count},
		"prompt":  {Handle: count, Unbounded: true},
	}})
	p := connect(t, d)
	big := `{"text":"` + strings.Repeat("x", dispatch.MaxParams) + `"}`
	p.send(1, "nope", `{}`)
	p.send(2, "closed", `{}`)
	p.send(3, "bounded", big)
	p.send(4, "prompt", big)
	if r := p.wait(1); errorCode(r) != "method_not_found" || r.Error.Code != wire.MethodNotFound || r.Error.Message != "unknown method nope" {
		t.Fatalf("unknown method: %+v", r.Error)
	}
	if r := p.wait(2); errorCode(r) != "busy" || r.Error.Message != "not now" {
		t.Fatalf("admit: %+v", r.Error)
	}
	if r := p.wait(3); errorCode(r) != "invalid_params" || !strings.Contains(r.Error.Message, "params of bounded are larger than 1048576 bytes") {
		t.Fatalf("bounded: %+v", r.Error)
	}
	if r := p.wait(4); r.Error != nil {
		t.Fatalf("unbounded: %+v", r.Error)
	}
	if ran != 1 {
		t.Fatalf("%d handlers ran, want 1 (the unbounded one)", ran)
	}
}

// ReplyLater: the dispatcher sends nothing; the dialect answers when it
// can, with the dialect's error mapping applied to errors it returns.
func TestReplyLaterLeavesTheAnswerToTheDialect(t *testing.T) {
	type held struct {
		conn *jsonrpc2.Conn
		id   jsonrpc2.ID
	}
	var d *dispatch.Dispatcher
	var waiting []held
	var conn *jsonrpc2.Conn
	d = dispatch.New(dispatch.Dialect{
		Methods: map[string]dispatch.Method{
			"prompt": {Handle: func(c *dispatch.Call) (any, error) {
				waiting = append(waiting, held{conn, c.ID})
				return dispatch.ReplyLater()
			}},
			"settle": {Handle: func(*dispatch.Call) (any, error) {
				for _, h := range waiting {
					d.Reply(h.conn, h.id, map[string]string{"stopReason": "end_turn"})
				}
				return nil, &engine.Error{Code: engine.CodeSessionNotFound, Message: "gone"}
			}},
		},
		Error: func(c *dispatch.Call, err error) *jsonrpc2.Error {
			return wire.NewError(-32002, string(engine.CodeOf(err)), c.Method+": "+err.Error(), nil)
		},
	})
	p := connect(t, d)
	conn = p.conn
	p.send(1, "prompt", `{}`)
	p.send(2, "settle", `{}`)
	if r := p.wait(2); errorCode(r) != "session_not_found" || r.Error.Message != "settle: gone" {
		t.Fatalf("settle: %+v", r.Error)
	}
	if r := p.wait(1); string(r.Result) != `{"stopReason":"end_turn"}` {
		t.Fatalf("prompt: %+v", r)
	}
}

// Decode refuses what encoding/json would accept silently or alter, in
// the dialect's words.
func TestDecodeRefusals(t *testing.T) {
	raw := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }
	var v struct {
		Name  string `json:"name"`
		Files []struct {
			Text string `json:"text"`
		} `json:"files"`
	}
	for _, tc := range []struct {
		params *json.RawMessage
		code   engine.Code
		msg    string
	}{
		{nil, "", ""},
		{raw(`null`), "", ""},
		{raw(`[1]`), engine.CodeInvalidParams, "params must be an object"},
		{raw(`{"name":1}`), engine.CodeInvalidParams, "name must be a string"},
		{raw(`{"name":"\ud800"}`), engine.CodeInvalidParams, "name is not valid Unicode (an unpaired surrogate \\ud800)"},
		{raw(`{"files":[{"text":"\udc00"}]}`), engine.CodeInvalidTextFiles, "files[0].text is not valid Unicode (an unpaired surrogate \\udc00)"},
		{raw(`{"name":"a",}`), engine.CodeInvalidParams, "params: invalid character '}' looking for beginning of object key string"},
	} {
		err := dispatch.Decode(tc.params, &v, words{})
		if tc.code == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.params, err)
			}
			continue
		}
		if engine.CodeOf(err) != tc.code || err.Error() != tc.msg {
			t.Errorf("%s: got %v (%s), want %q (%s)", *tc.params, err, engine.CodeOf(err), tc.msg, tc.code)
		}
	}
}
