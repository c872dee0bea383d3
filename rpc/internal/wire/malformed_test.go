package wire

import (
	"strconv"
	"strings"
	"testing"
)

// Every malformed frame gets exactly one error reply (or, for a response
// with id null, none), and the valid request after it is still answered.
func TestMalformedNDJSON(t *testing.T) {
	const next = `{"jsonrpc":"2.0","id":"next","method":"echo","params":["ok"]}`
	for _, tc := range []struct {
		name, input string
		id          string // raw JSON id of the error reply; "" means no reply expected
		code        int64
	}{
		{"garbage", "hello world", "null", ParseError},
		{"bad json", `{"jsonrpc":"2.0","id":1,"method":"echo",}`, "null", ParseError},
		{"trailing bytes", `{"jsonrpc":"2.0","id":1,"method":"echo"} x`, "null", ParseError},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"echo"}{"a":1}`, "null", ParseError},
		{"unclosed string", `{"jsonrpc":"2.0","id":1,"method":"ech`, "null", ParseError},
		{"stray close", `]`, "null", ParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, "null", InvalidRequest},
		{"empty batch", `[]`, "null", InvalidRequest},
		{"number", `42`, "null", InvalidRequest},
		{"string", `"hi"`, "null", InvalidRequest},
		{"null", `null`, "null", InvalidRequest},
		{"no jsonrpc", `{"id":1,"method":"echo"}`, "1", InvalidRequest},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"a","method":"echo"}`, `"a"`, InvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":2,"method":7}`, "2", InvalidRequest},
		{"method and result", `{"jsonrpc":"2.0","id":3,"method":"echo","result":1}`, "3", InvalidRequest},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"echo"}`, "null", InvalidRequest},
		{"id negative", `{"jsonrpc":"2.0","id":-1,"method":"echo"}`, "null", InvalidRequest},
		{"id fraction", `{"jsonrpc":"2.0","id":1.5,"method":"echo"}`, "null", InvalidRequest},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"echo"}`, "null", InvalidRequest},
		{"id too big", `{"jsonrpc":"2.0","id":99999999999999999999,"method":"echo"}`, "null", InvalidRequest},
		{"params scalar", `{"jsonrpc":"2.0","id":4,"method":"echo","params":5}`, "4", InvalidRequest},
		{"empty object", `{}`, "null", InvalidRequest},
		{"only id", `{"jsonrpc":"2.0","id":5}`, "5", InvalidRequest},
		{"response with result and error", `{"jsonrpc":"2.0","id":6,"result":1,"error":{"code":1,"message":"x"}}`, "null", InvalidRequest},
		{"response without id", `{"jsonrpc":"2.0","result":1}`, "null", InvalidRequest},
		{"response bad error", `{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}`, "null", InvalidRequest},
		{"response bad id", `{"jsonrpc":"2.0","id":-7,"result":1}`, "null", InvalidRequest},
		{"response id null is dropped", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, "", 0},
		{"unknown response is ignored", `{"jsonrpc":"2.0","id":99,"result":1}`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Options{}, nil)
			s.send(tc.input + "\n" + next + "\n")
			if tc.id != "" {
				id, code, dc := errorOf(t, s.readFrame(NDJSON))
				wantDC := DataInvalidRequest
				if tc.code == ParseError {
					wantDC = DataParseError
				}
				if id != tc.id || code != tc.code || dc != wantDC {
					t.Fatalf("error reply id %s code %d data.code %s, want %s %d %s", id, code, dc, tc.id, tc.code, wantDC)
				}
			}
			s.expect(NDJSON, `{"jsonrpc":"2.0","id":"next","result":["ok"]}`)
			if st := s.stream.Stats(); tc.id != "" && st.Rejected != 1 {
				t.Fatalf("Rejected = %d", st.Rejected)
			}
		})
	}
}

func TestParseErrorReplyShape(t *testing.T) {
	s := newServer(t, Options{}, nil)
	s.send("{oops\n")
	got := s.readFrame(NDJSON)
	const prefix = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: `
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, `","data":{"code":"parse_error"}}}`) {
		t.Fatalf("got %s", got)
	}
	s.send(`[1]` + "\n")
	if got := s.readFrame(NDJSON); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batches are not supported","data":{"code":"invalid_request"}}}` {
		t.Fatalf("got %s", got)
	}
}

func TestMalformedLSP(t *testing.T) {
	const next = `{"jsonrpc":"2.0","id":"next","method":"echo","params":["ok"]}`
	for _, tc := range []struct {
		name, input string
		errors      int   // parse-error replies before the answer to next
		code        int64 // of those replies
	}{
		{"garbled length", "Content-Length: abc\r\n\r\n{}", 1, ParseError},
		{"negative length", "Content-Length: -4\r\n\r\n{}", 1, ParseError},
		{"header without colon", "Content-Length: 2\r\nbogus\r\n\r\n{}", 1, ParseError},
		{"no Content-Length", "Content-Type: x\r\n\r\n{}", 1, ParseError},
		{"bad body", lsp(`{"jsonrpc":`), 1, ParseError},
		{"empty body", "Content-Length: 0\r\n\r\n", 1, ParseError},
		{"batch body", lsp(`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`), 1, InvalidRequest},
		// Too long: the body swallows the start of next; it is handed back.
		{"length too long", "Content-Length: 30\r\n\r\n" + `{"a":1`, 1, ParseError},
		// A byte too long: the body takes the "C" of next's header.
		{"length a byte too long", "Content-Length: 8\r\n\r\n" + `{"a":1}`, 1, ParseError},
		{"broken body a byte too long", "Content-Length: 7\r\n\r\n" + `{"a":1`, 1, ParseError},
		{"absurd length", "Content-Length: 1000000000000\r\n\r\n{}", 1, ParseError},
		// Too short: the rest of the body is garbage glued to the next header.
		{"length too short", "Content-Length: 5\r\n\r\n" + `{"a":1}`, 2, ParseError},
		{"garbage line", "hello\n", 1, ParseError},
		{"ndjson where lsp is forced", `{"jsonrpc":"2.0","id":1,"method":"echo"}` + "\n", 1, ParseError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Options{Framing: LSP}, nil)
			s.send(tc.input + lsp(next))
			for range tc.errors {
				id, code, _ := errorOf(t, s.readFrame(LSP))
				if id != "null" || code != tc.code {
					t.Fatalf("error reply id %s code %d, want null %d", id, code, tc.code)
				}
			}
			s.expect(LSP, `{"jsonrpc":"2.0","id":"next","result":["ok"]}`)
		})
	}
}

// A broken header is answered at once, not when the next frame arrives.
func TestLSPErrorIsPrompt(t *testing.T) {
	for _, in := range []string{"Content-Length: nope\r\n\r\n{}", "garbage\r\n", "Content-Type: x\r\n\r\n"} {
		s := newServer(t, Options{Framing: LSP}, nil)
		s.send(in)
		if id, code, _ := errorOf(t, s.readFrame(LSP)); id != "null" || code != ParseError {
			t.Fatalf("%q: id %s code %d", in, id, code)
		}
	}
}

func TestHugeMessage(t *testing.T) {
	size := 10 << 20
	if raceEnabled {
		size = 1 << 20
	}
	params := `{"big":"` + strings.Repeat("abcdefghij", size/10) + `"}`
	req := `{"jsonrpc":"2.0","id":1,"method":"size","params":` + params + `}`
	for _, f := range []Framing{NDJSON, LSP} {
		t.Run(f.String(), func(t *testing.T) {
			s := newServer(t, Options{}, nil)
			in := req + "\n"
			if f == LSP {
				in = lsp(req)
			}
			go s.send(in)
			s.expect(f, `{"jsonrpc":"2.0","id":1,"result":{"len":`+strconv.Itoa(len(params))+`}}`)
			// And a 10 MiB reply.
			s.send(frameFor(f, `{"jsonrpc":"2.0","id":2,"method":"big","params":[`+strconv.Itoa(size)+`]}`))
			if got := s.readFrame(f); got != `{"id":2,"result":"`+strings.Repeat("x", size)+`","jsonrpc":"2.0"}` {
				t.Fatalf("reply of %d bytes is wrong: %.200s", len(got), got)
			}
		})
	}
}

func frameFor(f Framing, body string) string {
	if f == LSP {
		return lsp(body)
	}
	return body + "\n"
}
