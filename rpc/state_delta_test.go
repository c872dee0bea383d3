package rpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loopdev/loop/rpc"
)

// stateView is the part of a snapshot that a client following session/state
// keeps: the history and the prompt timings, each with where it starts.
type stateView struct {
	Messages          []json.RawMessage `json:"messages"`
	MessagesFrom      int               `json:"messagesFrom"`
	MessageCount      int               `json:"messageCount"`
	PromptTimings     []json.RawMessage `json:"promptTimings"`
	PromptTimingsFrom int               `json:"promptTimingsFrom"`
}

// mirror is a delta client's copy of one session, rebuilt by splicing each
// session/state at its messagesFrom and promptTimingsFrom.
type mirror struct {
	t           *testing.T
	timingsOnly bool // a stateMessages false client: no history
	messages    []json.RawMessage
	timings     []json.RawMessage
	states      []stateView // every session/state applied, in wire order
}

func (m *mirror) apply(line string) {
	m.t.Helper()
	var n struct {
		Params struct {
			Snapshot struct {
				State stateView `json:"state"`
			} `json:"snapshot"`
		} `json:"params"`
	}
	must(m.t, json.Unmarshal([]byte(line), &n))
	st := n.Params.Snapshot.State
	if m.timingsOnly {
		if len(st.Messages) != 0 || st.MessagesFrom != st.MessageCount {
			m.t.Fatalf("a client without messages was sent %d from %d", len(st.Messages), st.MessagesFrom)
		}
		st.MessagesFrom = len(m.messages)
	}
	if st.MessagesFrom > len(m.messages) || st.PromptTimingsFrom > len(m.timings) {
		m.t.Fatalf("a delta starts past what the client holds (%d messages, %d timings): messagesFrom %d, promptTimingsFrom %d",
			len(m.messages), len(m.timings), st.MessagesFrom, st.PromptTimingsFrom)
	}
	m.messages = append(m.messages[:st.MessagesFrom:st.MessagesFrom], st.Messages...)
	m.timings = append(m.timings[:st.PromptTimingsFrom:st.PromptTimingsFrom], st.PromptTimings...)
	m.states = append(m.states, st)
}

// follow reads until a line containing marker, applying every
// session/state on the way, and returns that line.
func (m *mirror) follow(c *pipeClient, marker string) string {
	for {
		line := c.readUntil("")
		if strings.Contains(line, `"method":"session/state"`) {
			m.apply(line)
		}
		if strings.Contains(line, marker) {
			return line
		}
	}
}

// prompt runs one prompt to its settlement and the session/state after it.
func (m *mirror) prompt(c *pipeClient, sid, requestID, text string) {
	c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": requestID, "text": text})
	m.follow(c, "session/agent_settled")
	m.follow(c, `"method":"session/state"`)
}

// get is session/get's state.
func get(t *testing.T, c *pipeClient, m *mirror, params map[string]any) stateView {
	t.Helper()
	id := c.send("session/get", params)
	line := m.follow(c, fmt.Sprintf(`"id":%d,`, id))
	var r struct {
		Result struct {
			State stateView `json:"state"`
		} `json:"result"`
	}
	must(t, json.Unmarshal([]byte(line), &r))
	return r.Result.State
}

func sameJSON(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y bytes.Buffer
		if json.Compact(&x, a[i]) != nil || json.Compact(&y, b[i]) != nil || x.String() != y.String() {
			return false
		}
	}
	return true
}

func initialize(t *testing.T, c *pipeClient, stateMessages any) string {
	t.Helper()
	id := c.send("initialize", map[string]any{"protocolVersion": rpc.ProtocolVersion, "capabilities": map[string]any{"stateMessages": stateMessages}})
	return c.readUntil(fmt.Sprintf(`"id":%d,`, id))
}

const deltaScript = `{"turns":[
  {"match":"one","steps":[{"text":"answer one"}]},
  {"match":"two","steps":[{"text":"answer two"}]},
  {"purpose":"summary","steps":[{"text":"SUMMARY"}]},
  {"match":"three","steps":[{"text":"answer three"}]},
  {"match":"four","steps":[{"text":"answer four"}]}
]}`

// A "delta" client is sent, after each run, only the messages and prompt
// timings it does not hold yet, and splicing each session/state at
// messagesFrom and promptTimingsFrom rebuilds exactly what session/get
// returns, across prompts and a compaction.
func TestDeltaClientRebuildsTheStateSessionGetReturns(t *testing.T) {
	c := startServer(t, deltaScript)
	initialize(t, c, "delta")
	sid := c.newSession()
	m := &mirror{t: t}
	check := func(when string, wantMessages, wantTimings int) {
		t.Helper()
		full := get(t, c, m, map[string]any{"sessionId": sid})
		if full.MessagesFrom != 0 || full.PromptTimingsFrom != 0 || len(full.Messages) != wantMessages || len(full.PromptTimings) != wantTimings {
			t.Fatalf("%s: session/get is not complete: %d messages from %d, %d timings from %d", when,
				len(full.Messages), full.MessagesFrom, len(full.PromptTimings), full.PromptTimingsFrom)
		}
		if !sameJSON(m.messages, full.Messages) || !sameJSON(m.timings, full.PromptTimings) {
			t.Fatalf("%s: the rebuilt state differs from session/get:\n%d messages %d timings\nwant %d messages %d timings",
				when, len(m.messages), len(m.timings), len(full.Messages), len(full.PromptTimings))
		}
	}
	last := func() stateView { return m.states[len(m.states)-1] }

	m.prompt(c, sid, "r1", "one")
	check("after the first prompt", 2, 1)
	m.prompt(c, sid, "r2", "two")
	if st := last(); st.MessagesFrom != 2 || len(st.Messages) != 2 || st.PromptTimingsFrom != 1 || len(st.PromptTimings) != 1 {
		t.Fatalf("the second prompt's state is not a delta: %d messages from %d, %d timings from %d",
			len(st.Messages), st.MessagesFrom, len(st.PromptTimings), st.PromptTimingsFrom)
	}
	check("after the second prompt", 4, 2)

	id := c.send("session/compact", map[string]any{"sessionId": sid})
	m.follow(c, fmt.Sprintf(`"id":%d,`, id))
	if st := last(); st.MessagesFrom != 4 || len(st.Messages) != 0 || st.PromptTimingsFrom != 2 || len(st.PromptTimings) != 0 {
		t.Fatalf("a compaction adds no message or timing, yet its state carries %d messages from %d, %d timings from %d",
			len(st.Messages), st.MessagesFrom, len(st.PromptTimings), st.PromptTimingsFrom)
	}
	check("after the compaction", 4, 2)

	m.prompt(c, sid, "r3", "three")
	m.prompt(c, sid, "r4", "four")
	check("after four prompts", 8, 4)
	if st := last(); st.MessagesFrom != 6 || st.PromptTimingsFrom != 3 {
		t.Fatalf("the fourth prompt's state starts at message %d, timing %d", st.MessagesFrom, st.PromptTimingsFrom)
	}
}

// A client that asked for no messages still gets the prompt timings, but
// only those added since its previous session/state, not all of them again.
func TestStateWithoutMessagesCarriesOnlyNewTimings(t *testing.T) {
	c := startServer(t, deltaScript)
	initialize(t, c, false)
	sid := c.newSession()
	m := &mirror{t: t, timingsOnly: true}
	m.prompt(c, sid, "r1", "one")
	m.prompt(c, sid, "r2", "two")
	st := m.states[len(m.states)-1]
	if len(st.Messages) != 0 || st.PromptTimingsFrom != 1 || len(st.PromptTimings) != 1 {
		t.Fatalf("a false client's second state carries %d messages from %d, %d timings from %d",
			len(st.Messages), st.MessagesFrom, len(st.PromptTimings), st.PromptTimingsFrom)
	}
	full := get(t, c, m, map[string]any{"sessionId": sid})
	if !sameJSON(m.timings, full.PromptTimings) {
		t.Fatalf("the timings rebuilt from session/state differ from session/get's")
	}
}

// session/get's messagesFrom bounds the timings too: those of the prompts
// that start at or after it, with promptTimingsFrom saying where.
func TestSessionGetMessagesFromBoundsTheTimings(t *testing.T) {
	c := startServer(t, deltaScript)
	sid := c.newSession()
	m := &mirror{t: t}
	m.prompt(c, sid, "r1", "one")
	m.prompt(c, sid, "r2", "two")
	for _, tc := range []struct{ from, timingsFrom, timings int }{{0, 0, 2}, {1, 1, 1}, {2, 1, 1}, {3, 2, 0}, {99, 2, 0}} {
		st := get(t, c, m, map[string]any{"sessionId": sid, "messagesFrom": tc.from})
		if st.PromptTimingsFrom != tc.timingsFrom || len(st.PromptTimings) != tc.timings {
			t.Errorf("messagesFrom %d: %d timings from %d, want %d from %d", tc.from, len(st.PromptTimings), st.PromptTimingsFrom, tc.timings, tc.timingsFrom)
		}
	}
}

// capabilities.stateMessages is true, false or "delta"; anything else is
// refused, and the refused initialize changes nothing.
func TestInitializeRefusesAnUnknownStateMessages(t *testing.T) {
	c := startServer(t, deltaScript)
	for _, v := range []any{"full", 3, "", map[string]any{}} {
		line := initialize(t, c, v)
		if !strings.Contains(line, `"code":"invalid_params"`) || !strings.Contains(line, "stateMessages") {
			t.Errorf("stateMessages %v: %s", v, line)
		}
	}
	for _, v := range []any{true, false, "delta", nil} {
		if line := initialize(t, c, v); !strings.Contains(line, `"result"`) {
			t.Errorf("stateMessages %v refused: %s", v, line)
		}
	}
}

// applyReply splices a session/get reply into the mirror at its
// messagesFrom and promptTimingsFrom, as a client that asked for it does.
func (m *mirror) applyReply(line string) {
	m.t.Helper()
	var r struct {
		Result struct {
			State stateView `json:"state"`
		} `json:"result"`
	}
	must(m.t, json.Unmarshal([]byte(line), &r))
	st := r.Result.State
	if st.MessagesFrom > len(m.messages) || st.PromptTimingsFrom > len(m.timings) {
		m.t.Fatalf("a reply starts past what the client holds")
	}
	m.messages = append(m.messages[:st.MessagesFrom:st.MessagesFrom], st.Messages...)
	m.timings = append(m.timings[:st.PromptTimingsFrom:st.PromptTimingsFrom], st.PromptTimings...)
}

const getScript = `{"turns":[
  {"match":"one","steps":[{"text":"answer one"}]},
  {"match":"two","steps":[{"text":"answer two"}]},
  {"match":"three","steps":[{"toolCall":{"name":"read","arguments":{"path":"missing.txt"}}}]},
  {"match":"three","steps":[{"text":"answer three"}]},
  {"match":"four","steps":[{"text":"answer four"}]},
  {"match":"five","steps":[{"text":"answer five"}]}
]}`

// A delta client that opens a session with session/get holds what the
// reply carried: the next session/state starts where the reply ended, not
// with the whole history again. Replies and notifications reach it in the
// order they were built, so splicing both in wire order, with gets sent
// while runs go on, never leaves a gap and rebuilds what session/get
// returns.
func TestDeltaClientHoldsWhatSessionGetReplied(t *testing.T) {
	c := startServer(t, getScript)
	sid := c.newSession()
	(&mirror{t: t}).prompt(c, sid, "r1", "one")
	(&mirror{t: t}).prompt(c, sid, "r2", "two")
	initialize(t, c, "delta") // a new choice: nothing held
	m := &mirror{t: t}
	m.applyReply(m.follow(c, fmt.Sprintf(`"id":%d,`, c.send("session/get", map[string]any{"sessionId": sid}))))
	m.prompt(c, sid, "r3", "three")
	if st := m.states[len(m.states)-1]; st.MessagesFrom != 4 || st.PromptTimingsFrom != 2 {
		t.Fatalf("the first state after session/get starts at message %d, timing %d: the reply's 4 messages and 2 timings were sent again", st.MessagesFrom, st.PromptTimingsFrom)
	}

	// Gets in flight beside runs: each reply spliced where it says.
	gets := map[string]bool{}
	for i, text := range []string{"four", "five"} {
		c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": fmt.Sprint("q", i), "text": text})
		for _, from := range []int{0, len(m.messages)} {
			gets[fmt.Sprintf(`"id":%d,`, c.send("session/get", map[string]any{"sessionId": sid, "messagesFrom": from}))] = true
		}
	}
	// Read until every get is answered and the last run's session/state
	// (the first one after its agent_settled) has come, in whichever order
	// the server wrote them: a reply built after that state comes after
	// it, so waiting for the state once the gets are answered would wait
	// for a frame this loop already read.
	settled, lastState := 0, false
	for !lastState || len(gets) > 0 {
		line := c.readUntil("")
		switch {
		case strings.Contains(line, `"method":"session/state"`):
			m.apply(line)
			if settled == 2 {
				lastState = true
			}
		case strings.Contains(line, "session/agent_settled"):
			settled++
		default:
			for id := range gets {
				if strings.Contains(line, id) {
					m.applyReply(line)
					delete(gets, id)
				}
			}
		}
	}
	full := get(t, c, m, map[string]any{"sessionId": sid})
	if !sameJSON(m.messages, full.Messages) || !sameJSON(m.timings, full.PromptTimings) {
		t.Fatalf("the state rebuilt from replies and notifications (%d messages, %d timings) differs from session/get's (%d, %d)",
			len(m.messages), len(m.timings), len(full.Messages), len(full.PromptTimings))
	}
}
