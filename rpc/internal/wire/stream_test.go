package wire

import (
	"strconv"
	"testing"
)

func TestNDJSONRoundTrip(t *testing.T) {
	s := newServer(t, Options{}, nil)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}` + "\n")
	s.expect(NDJSON, `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
	s.send("\n\n   \n" + `{"jsonrpc":"2.0","id":"x","method":"notify","params":{"n":2}}` + "\r\n")
	s.expect(NDJSON, `{"jsonrpc":"2.0","method":"tick","params":{"i":0}}`)
	s.expect(NDJSON, `{"jsonrpc":"2.0","method":"tick","params":{"i":1}}`)
	s.expect(NDJSON, `{"jsonrpc":"2.0","id":"x","result":{"sent":2}}`)
	// A notification gets no reply: the next output answers the request after it.
	s.send(`{"jsonrpc":"2.0","method":"echo"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"nope"}` + "\n")
	s.expect(NDJSON, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no method nope","data":{"code":"method_not_found"}}}`)
	if f := s.stream.Framing(); f != NDJSON {
		t.Fatalf("framing %v", f)
	}
}

func TestPrettyPrintedNDJSON(t *testing.T) {
	s := newServer(t, Options{}, nil)
	s.send("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"method\": \"echo\",\n  \"params\": {\n    \"s\": \"a } ] \\\" [\",\n    \"list\": [\n      {\"x\": 1}\n    ]\n  }\n}\n")
	s.expect(NDJSON, `{"jsonrpc":"2.0","id":1,"result":{"s":"a } ] \" [","list":[{"x":1}]}}`)
	// A truncated value followed by a whole message: one error, then the message.
	s.send(`{"jsonrpc":"2.0","id":2,"method":"echo",` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}` + "\n")
	id, code, dc := errorOf(t, s.readFrame(NDJSON))
	if id != "null" || code != ParseError || dc != DataParseError {
		t.Fatalf("truncated value: id %s code %d %s", id, code, dc)
	}
	s.expect(NDJSON, `{"jsonrpc":"2.0","id":3,"result":[3]}`)
}

func TestLSPRoundTrip(t *testing.T) {
	s := newServer(t, Options{}, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":"é"}}`
	s.send(lsp(body))
	got := s.readFrame(LSP)
	if got != `{"id":1,"result":{"a":"é"},"jsonrpc":"2.0"}` {
		t.Fatalf("got %s", got)
	}
	// Bare \n line ends, lower-case name, extra headers, blank lines between frames.
	body = `{"jsonrpc":"2.0","id":2,"method":"notify","params":{"n":1}}`
	s.send("\r\n\ncontent-length: " + itoa(len(body)) + "\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n" + body)
	s.expect(LSP, `{"jsonrpc":"2.0","method":"tick","params":{"i":0}}`)
	s.expect(LSP, `{"jsonrpc":"2.0","id":2,"result":{"sent":1}}`)
	if f := s.stream.Framing(); f != LSP {
		t.Fatalf("framing %v", f)
	}
}

func TestDetect(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
	for _, tc := range []struct {
		name  string
		input string
		want  Framing
	}{
		{"ndjson", req + "\n", NDJSON},
		{"ndjson after blank lines", "\n \r\n\t" + req + "\n", NDJSON},
		{"lsp", lsp(req), LSP},
		{"lsp after whitespace", "\r\n  " + lsp(req), LSP},
		{"lsp any case", "CONTENT-LENGTH:" + itoa(len(req)) + "\r\n\r\n" + req, LSP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Options{}, nil)
			s.send(tc.input)
			s.expect(tc.want, `{"jsonrpc":"2.0","id":1,"result":[1]}`)
			if f := s.stream.Framing(); f != tc.want {
				t.Fatalf("framing %v, want %v", f, tc.want)
			}
		})
	}
	t.Run("forced ndjson reads Content-Length as garbage", func(t *testing.T) {
		s := newServer(t, Options{Framing: NDJSON}, nil)
		s.send("Content-Length: 3\r\n")
		if _, code, _ := errorOf(t, s.readFrame(NDJSON)); code != ParseError {
			t.Fatalf("code %d", code)
		}
	})
}

func TestParseFraming(t *testing.T) {
	for in, want := range map[string]Framing{"auto": Auto, "LSP": LSP, "ndjson": NDJSON, "": Auto} {
		if got, err := ParseFraming(in); err != nil || got != want {
			t.Errorf("ParseFraming(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFraming("xml"); err == nil {
		t.Error("ParseFraming(xml) succeeded")
	}
	for _, f := range []Framing{Auto, LSP, NDJSON} {
		if got, _ := ParseFraming(f.String()); got != f {
			t.Errorf("round trip of %v gave %v", f, got)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
