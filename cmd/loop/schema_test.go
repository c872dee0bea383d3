package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/rpc/rpctest"
	"github.com/rogpeppe/go-internal/testscript"
)

// The frames of every scenario are checked against the schema `loop
// protocol schema` prints, in both directions: every request a script
// sends is checked against its method's params (where they do not match,
// the server must have refused them with an error), every reply against
// the method's result or the error object, every notification and
// server request against its params, and every answer a script gives the
// server's requests against that request's result. TestScripts records
// each scenario's frames (rpctest.Record) and checks them when it ends.
//
// The validator is github.com/google/jsonschema-go, already in the module
// graph through the MCP SDK: a maintained draft 2020-12 implementation,
// so the schema is checked by code that did not write it.

// protocolSchema is the resolved schema of the native protocol, built
// once per test binary run: its root has one property per definition,
// so one resolution serves them all ({"SessionGetResult": value} is
// checked against that definition).
type protocolSchema struct {
	once     sync.Once
	err      error
	bundle   []byte
	names    map[string]bool
	resolved *jsonschema.Resolved
}

func (p *protocolSchema) load() error {
	p.once.Do(func() {
		if p.bundle, p.err = rpc.ProtocolSchema(); p.err != nil {
			return
		}
		var root jsonschema.Schema
		if err := json.Unmarshal(p.bundle, &root); err != nil {
			p.err = fmt.Errorf("the schema does not parse: %w", err)
			return
		}
		root.AnyOf = nil
		root.Properties = map[string]*jsonschema.Schema{}
		p.names = map[string]bool{}
		for name := range root.Defs {
			root.Properties[name] = &jsonschema.Schema{Ref: "#/$defs/" + name}
			p.names[name] = true
		}
		p.resolved, p.err = root.Resolve(nil)
	})
	return p.err
}

// validate checks raw against the definition def.
func (p *protocolSchema) validate(def string, raw json.RawMessage) error {
	if err := p.load(); err != nil {
		return err
	}
	if !p.names[def] {
		return fmt.Errorf("the schema has no definition %s", def)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return p.resolved.Validate(map[string]any{def: v})
}

// frameLog is one scenario's frames, in the order Record saw them.
type frameLog struct {
	mu     sync.Mutex
	frames []rpctest.Frame
}

func (l *frameLog) add(f rpctest.Frame) {
	l.mu.Lock()
	l.frames = append(l.frames, f)
	l.mu.Unlock()
}

// recordFrames records a scenario's frames and checks them against the
// schema when the scenario ends.
func recordFrames(env *testscript.Env, schema *protocolSchema) {
	log := &frameLog{}
	rpctest.Record(env, log.add)
	env.Defer(func() {
		log.mu.Lock()
		frames := slices.Clone(log.frames)
		log.mu.Unlock()
		problems, validated, err := checkFrames(schema, frames)
		env.T().Log(fmt.Sprintf("%d frames checked against the protocol schema", validated))
		t, _ := env.T().(interface{ Errorf(string, ...any) })
		if t == nil {
			return
		}
		if err != nil {
			t.Errorf("checking the frames against the protocol schema: %v", err)
		}
		const most = 10
		for i, p := range problems {
			if i == most {
				t.Errorf("… and %d more frames that do not match the protocol schema", len(problems)-most)
				break
			}
			t.Errorf("a frame does not match the protocol schema (loop protocol schema): %s", p)
		}
	})
}

// conn is what checkFrames knows of one server's conversation.
type conn struct {
	acp         bool // the Agent Client Protocol: not the native schema's
	initialized bool // a native initialize was sent
	// calls are the script's requests by id: the method, and why the
	// schema refused its params ("" when it did not).
	calls map[string]call
	// asked are the server's requests by id: the method.
	asked map[string]string
}

type call struct{ method, refused string }

// frameMessage is the members of a JSON-RPC message checkFrames reads.
type frameMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// checkFrames checks one scenario's frames and says which do not match.
// The err is a schema that cannot be used at all.
func checkFrames(schema *protocolSchema, frames []rpctest.Frame) (problems []string, validated int, err error) {
	conns := map[int]*conn{}
	methods := map[string]bool{}
	validate := func(def string, raw json.RawMessage) error {
		validated++
		return schema.validate(def, raw)
	}
	for _, f := range frames {
		c := conns[f.Conn]
		if c == nil {
			c = &conn{calls: map[string]call{}, asked: map[string]string{}, acp: slices.Contains(f.Args, "--acp")}
			conns[f.Conn] = c
		}
		if c.acp || f.Raw {
			// ACP is not the native protocol; bytes a script writes by
			// hand are malformed on purpose (the server's answers to
			// them are still checked).
			continue
		}
		var m frameMessage
		if json.Unmarshal(f.Body, &m) != nil {
			continue // rpctest itself fails a server that writes such a frame
		}
		id := string(bytes.TrimSpace(m.ID))
		where := func(what string) string {
			dir := "script → server"
			if f.FromServer {
				dir = "server → script"
			}
			return fmt.Sprintf("server %d (%s), %s %s: %s", f.Conn, f.Name, dir, what, clipFrame(f.Body))
		}
		fail := func(what string, err error) {
			problems = append(problems, where(what)+"\n\t"+strings.ReplaceAll(err.Error(), "\n", "\n\t"))
		}
		if !f.FromServer {
			switch {
			case m.Method != nil && m.ID != nil:
				method := *m.Method
				if method == "initialize" && !c.initialized {
					var v struct {
						ProtocolVersion json.RawMessage `json:"protocolVersion"`
					}
					_ = json.Unmarshal(m.Params, &v)
					if len(v.ProtocolVersion) > 0 && v.ProtocolVersion[0] != '"' && string(v.ProtocolVersion) != "null" {
						c.acp = true // the switch to ACP (docs/protocol.md, initialize)
						continue
					}
					c.initialized = true
				}
				cl := call{method: method}
				if len(methods) == 0 {
					for _, name := range specMethods(schema) {
						methods[name] = true
					}
				}
				if !methods[method] {
					cl.refused = "no such method"
				} else if err := validate(paramsDef(method), orEmpty(m.Params)); err != nil {
					cl.refused = err.Error()
				}
				c.calls[id] = cl
			case m.Method != nil:
				// A notification: the known ones are checked; the server
				// ignores every other (docs/protocol.md 2.2).
				switch *m.Method {
				case "exit", "initialized", "$/cancelRequest":
					if err := validate("ClientNotification", withParams(f.Body, m.Params)); err != nil {
						fail("notification "+*m.Method, err)
					}
				}
			default:
				// The script's answer to a server request: anything
				// goes, as with params, since a script may send what the
				// protocol does not allow on purpose (an unknown
				// decision counts as rejected, docs/protocol.md 6); the
				// server's next frames are what is checked.
				delete(c.asked, id)
			}
			continue
		}
		switch {
		case m.Method != nil && m.ID != nil:
			c.asked[id] = *m.Method
			if err := validate("ServerRequest", f.Body); err != nil {
				fail("request "+*m.Method, err)
			}
		case m.Method != nil:
			if err := validate("ServerNotification", f.Body); err != nil {
				fail("notification "+*m.Method, err)
			}
		default:
			if err := validate("Response", f.Body); err != nil {
				fail("response", err)
				continue
			}
			cl, ok := c.calls[id]
			delete(c.calls, id)
			switch {
			case m.Error != nil:
				// Checked by Response: data.code with its integer.
			case !ok:
				// A reply to a request the script wrote by hand.
			case cl.refused != "":
				problems = append(problems, where("result of "+cl.method)+
					"\n\tthe server accepted params the schema refuses: "+strings.ReplaceAll(cl.refused, "\n", "\n\t"))
			default:
				if err := validate(resultDef(cl.method), m.Result); err != nil {
					fail("result of "+cl.method, err)
				}
			}
		}
	}
	return problems, validated, schema.err
}

// specMethods lists the methods ClientRequest names.
func specMethods(schema *protocolSchema) []string {
	if schema.load() != nil {
		return nil
	}
	var doc struct {
		Defs map[string]struct {
			OneOf []struct {
				Title string `json:"title"`
			} `json:"oneOf"`
		} `json:"$defs"`
	}
	_ = json.Unmarshal(schema.bundle, &doc)
	var out []string
	for _, b := range doc.Defs["ClientRequest"].OneOf {
		out = append(out, b.Title)
	}
	return out
}

// paramsDef and resultDef name a method's definitions as the schema does
// (docs/protocol.md, "For client authors").
func paramsDef(method string) string { return pascalName(method) + "Params" }
func resultDef(method string) string { return pascalName(method) + "Result" }

func pascalName(method string) string {
	var b strings.Builder
	up := true
	for _, r := range method {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// orEmpty: missing or null params count as {} (docs/protocol.md 2.2).
func orEmpty(params json.RawMessage) json.RawMessage {
	if len(params) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return json.RawMessage("{}")
	}
	return params
}

// withParams is a notification frame with {} for missing params.
func withParams(body, params json.RawMessage) json.RawMessage {
	if len(params) > 0 {
		return body
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	m["params"] = json.RawMessage("{}")
	b, _ := json.Marshal(m)
	return b
}

func clipFrame(b []byte) string {
	const most = 400
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}

// TestFrameCheckFindsFramesTheProtocolTypesDoNotAllow: the check
// TestScripts runs on every scenario's frames passes a conversation the
// types allow and catches, one by one, a member the types do not
// declare, a missing required member, a value outside a closed set, an
// integer code that does not go with its data.code, and a server that
// accepts params the schema refuses.
func TestFrameCheckFindsFramesTheProtocolTypesDoNotAllow(t *testing.T) {
	schema := &protocolSchema{}
	frame := func(fromServer bool, body string) rpctest.Frame {
		return rpctest.Frame{Conn: 1, Name: "default", Args: []string{"loop"}, FromServer: fromServer, Body: []byte(body)}
	}
	good := []rpctest.Frame{
		frame(false, `{"jsonrpc":"2.0","id":1,"method":"workspace/add","params":{"cwd":"/x"}}`),
		frame(true, `{"jsonrpc":"2.0","id":1,"result":{"workspace":{"id":"w","name":"x","cwd":"/x"}}}`),
		frame(true, `{"jsonrpc":"2.0","method":"session/message","params":{"sessionId":"s","messageId":"m","event":"end","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}}`),
		frame(false, `{"jsonrpc":"2.0","id":2,"method":"session/get","params":{}}`),
		frame(true, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"sessionId is required","data":{"code":"invalid_params"}}}`),
		frame(true, `{"jsonrpc":"2.0","id":"approval-a","method":"session/request_approval","params":{"sessionId":"s","approvalId":"a","toolCallId":"c","tool":{"name":"bash","input":{}},"options":["allowed-once"]}}`),
		frame(false, `{"jsonrpc":"2.0","id":"approval-a","result":{"decision":"allowed-once"}}`),
	}
	problems, validated, err := checkFrames(schema, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("a conversation the types allow was refused:\n%s", strings.Join(problems, "\n"))
	}
	if validated != 7 {
		t.Errorf("validated %d frames, want 7 (params, the frames the server wrote, and a result against its method)", validated)
	}
	bad := map[string][]rpctest.Frame{
		"a member no type declares": {
			frame(false, `{"jsonrpc":"2.0","id":1,"method":"workspace/add","params":{"cwd":"/x"}}`),
			frame(true, `{"jsonrpc":"2.0","id":1,"result":{"workspace":{"id":"w","name":"x","cwd":"/x","extra":1}}}`),
		},
		"a required member missing": {
			frame(true, `{"jsonrpc":"2.0","method":"session/run_accepted","params":{"sessionId":"s"}}`),
		},
		"a role outside its set": {
			frame(true, `{"jsonrpc":"2.0","method":"session/message","params":{"sessionId":"s","messageId":"m","event":"end","message":{"role":"robot","content":[],"timestamp":1}}}`),
		},
		"an integer code of another data.code": {
			frame(false, `{"jsonrpc":"2.0","id":2,"method":"session/get","params":{}}`),
			frame(true, `{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"m","data":{"code":"invalid_params"}}}`),
		},
		"params the schema refuses, accepted": {
			frame(false, `{"jsonrpc":"2.0","id":3,"method":"session/set_title","params":{"sessionId":"s","title":7}}`),
			frame(true, `{"jsonrpc":"2.0","id":3,"result":{}}`),
		},
		"a server request outside its set": {
			frame(true, `{"jsonrpc":"2.0","id":"approval-a","method":"session/request_approval","params":{"sessionId":"s","approvalId":"a","toolCallId":"c","tool":{"name":"bash","input":{}},"options":["maybe"]}}`),
		},
	}
	for name, frames := range bad {
		problems, _, err := checkFrames(schema, frames)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 {
			t.Errorf("%s: want one problem, got %d: %q", name, len(problems), problems)
		}
	}
}
