package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/loopdev/loop/engine"
	loopacp "github.com/loopdev/loop/rpc/internal/acp"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// harness is an engine over a temp data root with a scripted model, and a
// workspace directory holding hello.txt.
type harness struct {
	t        *testing.T
	root     string
	work     string
	eng      *engine.Engine
	pageSize int
	// sandbox, when set, is what the engine is told the OS sandbox can do
	// (nil: what the system says).
	sandbox *engine.SandboxStatus
}

const configJSON = `{"providers":{"fake":{"api":"scripted","script":"script.json","titles":true,
 "models":[{"id":"m1","name":"Model One","contextWindow":100000,"efforts":["low","high"]},{"id":"m2","name":"Model Two"}]}}}`

func newHarness(t *testing.T, script string) *harness {
	t.Helper()
	return newHarnessWith(t, configJSON, script)
}

// newHarnessWith is newHarness with its own config.json.
func newHarnessWith(t *testing.T, config, script string) *harness {
	t.Helper()
	return newHarnessSandboxed(t, config, script, nil)
}

// newHarnessSandboxed is newHarnessWith whose engine is told what the OS
// sandbox can do (nil: what the system says).
func newHarnessSandboxed(t *testing.T, config, script string, sb *engine.SandboxStatus) *harness {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "script.json"), script)
	write(t, filepath.Join(root, "config.json"), config)
	work := t.TempDir()
	if canon, err := filepath.EvalSymlinks(work); err == nil {
		work = canon
	}
	write(t, filepath.Join(work, "hello.txt"), "hello\nworld\n")
	h := &harness{t: t, root: root, work: work, sandbox: sb}
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) start() {
	e, err := engine.New(engine.Options{DataRoot: h.root, Sandbox: h.sandbox})
	if err != nil {
		h.t.Fatal(err)
	}
	h.eng = e
}

func (h *harness) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.eng.Shutdown(ctx, engine.Abort); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
}

// restart is a new process over the same data root.
func (h *harness) restart() {
	h.stop()
	h.start()
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// client is an acp-go-sdk client connected to a Loop ACP agent through
// pipes and the real wire stream; frames records every message the agent
// sent, as raw JSON.
type client struct {
	t      *testing.T
	h      *harness
	agent  *loopacp.Agent
	cs     *sdk.ClientSideConnection
	rec    *recorder
	frames *frameLog
}

// awaitAgentClosed waits, after the client side has closed, for the
// agent's connection to see EOF, then for the agent to finish its work.
// The connection closes once the stream has drained, which may take its
// whole DrainTimeout (2 s, when a test leaves a request unanswered), so the
// bound is only a hang guard, far above that under any load.
func (h *harness) awaitAgentClosed(conn *jsonrpc2.Conn, agent *loopacp.Agent) {
	select {
	case <-conn.DisconnectNotify():
	case <-time.After(2 * time.Minute):
		h.t.Error("the agent's connection did not close after EOF")
		_ = conn.Close()
	}
	agent.Wait()
	agent.Close()
}

func (h *harness) connect() *client {
	h.t.Helper()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	stream := wire.New(c2aR, a2cW, wire.Options{DrainTimeout: 2 * time.Second})
	agent := loopacp.New(h.eng, loopacp.Options{Version: "test", PageSize: h.pageSize, Outbox: stream})
	conn := jsonrpc2.NewConn(context.Background(), stream, agent)
	agent.Bind(conn)
	rec := &recorder{}
	rec.save = true
	h.t.Cleanup(rec.stopAll)
	frames := &frameLog{}
	cs := sdk.NewClientSideConnection(rec, c2aW, io.TeeReader(a2cR, frames))
	cs.SetLogger(slog.New(slog.DiscardHandler))
	c := &client{t: h.t, h: h, agent: agent, cs: cs, rec: rec, frames: frames}
	h.t.Cleanup(func() {
		_ = c2aW.Close()
		h.awaitAgentClosed(conn, agent)
		_ = a2cR.Close()
	})
	return c
}

// initialize advertises fs: the test client is an editor that saves what
// the agent writes (editor_test.go).
func (c *client) initialize() sdk.InitializeResponse {
	c.t.Helper()
	return c.initializeWith(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
}

func (c *client) initializeWith(caps sdk.ClientCapabilities) sdk.InitializeResponse {
	c.t.Helper()
	return c.initializeAs("test", caps)
}

// initializeAs names the client in clientInfo.
func (c *client) initializeAs(name string, caps sdk.ClientCapabilities) sdk.InitializeResponse {
	c.t.Helper()
	res, err := c.cs.Initialize(ctx(c.t), sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersionNumber,
		ClientInfo:         &sdk.Implementation{Name: name, Version: "1"},
		ClientCapabilities: caps,
	})
	if err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	return res
}

func (c *client) newSession() sdk.NewSessionResponse {
	c.t.Helper()
	res, err := c.cs.NewSession(ctx(c.t), sdk.NewSessionRequest{Cwd: c.h.work, McpServers: []sdk.McpServer{}})
	if err != nil {
		c.t.Fatalf("session/new: %v", err)
	}
	return res
}

func (c *client) prompt(sid sdk.SessionId, text string) (sdk.PromptResponse, error) {
	return c.cs.Prompt(ctx(c.t), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func (c *client) mustPrompt(sid sdk.SessionId, text string) sdk.StopReason {
	c.t.Helper()
	res, err := c.prompt(sid, text)
	if err != nil {
		c.t.Fatalf("session/prompt %q: %v", text, err)
	}
	return res.StopReason
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return c
}

// recorder is the SDK client's side: it keeps every decoded update and
// answers permission requests with answer.
type recorder struct {
	mu          sync.Mutex
	updates     []sdk.SessionNotification
	permissions []sdk.RequestPermissionRequest
	answer      func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse
	answerErr   error // when set, permission requests get this error answer
	editor            // fs/* and terminal/* (editor_test.go)
}

var _ sdk.Client = (*recorder)(nil)

func (r *recorder) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n)
	return nil
}

func (r *recorder) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	r.mu.Lock()
	r.permissions = append(r.permissions, p)
	answer, answerErr := r.answer, r.answerErr
	r.mu.Unlock()
	if answerErr != nil {
		return sdk.RequestPermissionResponse{}, answerErr
	}
	if answer == nil {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
	}
	return answer(p), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

func (r *recorder) permissionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.permissions)
}

func selectOption(id string) func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
	return func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(id)}}}
	}
}

// frameLog splits the agent's output into frames (one JSON object a line).
type frameLog struct {
	mu     sync.Mutex
	buf    []byte
	frames []map[string]any
}

func (f *frameLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(f.buf[:i])
		f.buf = f.buf[i+1:]
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			m = map[string]any{"unparsable": string(line)}
		}
		f.frames = append(f.frames, m)
	}
	return len(p), nil
}

// updates returns the raw session/update params for sid.
func (f *frameLog) updates(sid string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, m := range f.frames {
		if m["method"] != "session/update" {
			continue
		}
		p, _ := m["params"].(map[string]any)
		if p["sessionId"] != sid {
			continue
		}
		u, _ := p["update"].(map[string]any)
		out = append(out, u)
	}
	return out
}

func (f *frameLog) all() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.frames...)
}

// waitFor polls cond until it holds; the deadline is only a hang guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// folded is what a client shows after applying updates: messages (text
// per kind and message id, in order) and tool call cards.
type folded struct {
	Messages []string
	Tools    map[string]map[string]any
	Order    []string
}

func fold(updates []map[string]any, skipUser bool) folded {
	f := folded{Tools: map[string]map[string]any{}}
	idx := map[string]int{}
	for _, u := range updates {
		kind, _ := u["sessionUpdate"].(string)
		switch kind {
		case "user_message_chunk", "agent_message_chunk", "agent_thought_chunk":
			if skipUser && kind == "user_message_chunk" {
				continue
			}
			c, _ := u["content"].(map[string]any)
			text, _ := c["text"].(string)
			if c["type"] != "text" {
				b, _ := json.Marshal(c)
				text = string(b)
			}
			key := kind + " " + fmt.Sprint(u["messageId"])
			i, ok := idx[key]
			if !ok {
				i = len(f.Messages)
				idx[key] = i
				f.Messages = append(f.Messages, key+": ")
			}
			f.Messages[i] += text
		case "tool_call", "tool_call_update":
			id, _ := u["toolCallId"].(string)
			card := f.Tools[id]
			if card == nil {
				card = map[string]any{}
				f.Tools[id] = card
				f.Order = append(f.Order, id)
			}
			for k, v := range u {
				if k != "sessionUpdate" && v != nil {
					card[k] = v
				}
			}
		}
	}
	return f
}

func kinds(updates []map[string]any) []string {
	var out []string
	for _, u := range updates {
		s, _ := u["sessionUpdate"].(string)
		if st, ok := u["status"].(string); ok {
			s += ":" + st
		}
		out = append(out, s)
	}
	return out
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s || strings.HasPrefix(x, s+":") {
			return true
		}
	}
	return false
}

// rawClient speaks JSON-RPC to the agent directly, for what the Go SDK
// cannot send (session/delete, calls before initialize) and for checking
// error objects byte for byte.
type rawClient struct {
	t    *testing.T
	conn *jsonrpc2.Conn
	mu   sync.Mutex
	note []*jsonrpc2.Request
}

type pipeRWC struct {
	io.Reader
	io.WriteCloser
}

func (h *harness) connectRaw() *rawClient {
	h.t.Helper()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	stream := wire.New(c2aR, a2cW, wire.Options{DrainTimeout: 2 * time.Second})
	agent := loopacp.New(h.eng, loopacp.Options{Version: "test", PageSize: h.pageSize, Outbox: stream})
	aconn := jsonrpc2.NewConn(context.Background(), stream, agent)
	agent.Bind(aconn)
	rc := &rawClient{t: h.t}
	rc.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipeRWC{a2cR, c2aW}), jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			rc.mu.Lock()
			rc.note = append(rc.note, req)
			rc.mu.Unlock()
			if req.Notif {
				return nil, nil
			}
			return nil, &jsonrpc2.Error{Code: -32601, Message: "not handled"}
		}), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	h.t.Cleanup(func() {
		_ = rc.conn.Close()
		h.awaitAgentClosed(aconn, agent)
	})
	return rc
}

// call returns the result, or the error object.
func (rc *rawClient) call(method string, params any) (json.RawMessage, *jsonrpc2.Error) {
	rc.t.Helper()
	var res json.RawMessage
	err := rc.conn.Call(ctx(rc.t), method, params, &res)
	if err == nil {
		return res, nil
	}
	var re *jsonrpc2.Error
	if !errors.As(err, &re) {
		rc.t.Fatalf("%s: %v", method, err)
	}
	return nil, re
}

func (rc *rawClient) mustCall(method string, params any, out any) {
	rc.t.Helper()
	res, re := rc.call(method, params)
	if re != nil {
		rc.t.Fatalf("%s: %d %s %s", method, re.Code, re.Message, errData(re))
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			rc.t.Fatalf("%s result: %v", method, err)
		}
	}
}

func errData(re *jsonrpc2.Error) map[string]any {
	var m map[string]any
	if re != nil && re.Data != nil {
		_ = json.Unmarshal(*re.Data, &m)
	}
	return m
}
