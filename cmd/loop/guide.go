package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// maxGuidedLine bounds what the guide keeps of one line it waits to see
// whole: replies worth following are small, and a long line (a snapshot
// with a history) is passed over, not buffered.
const maxGuidedLine = 64 << 10

// pasteGuide follows what the server writes to a person at a terminal
// (make run, README.md) and prints on stderr the next request to paste,
// filled in with the ids the replies carry: initialize, session/new,
// session/prompt, the answer to an approval, session/get. It only reads
// what passes through; stdout gets every byte unchanged.
type pasteGuide struct {
	out  io.Writer // the server's stdout
	hint io.Writer // stderr

	mu        sync.Mutex
	line      []byte // the start of a line not yet ended
	skipping  bool   // the line under way is too long to follow
	sessionID string // the session the guide prompted, once session/new answered
}

func newPasteGuide(out, hint io.Writer) *pasteGuide { return &pasteGuide{out: out, hint: hint} }

func (g *pasteGuide) Write(p []byte) (int, error) {
	n, err := g.out.Write(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if !g.skipping {
			if len(g.line)+len(chunk) > maxGuidedLine {
				g.skipping, g.line = true, g.line[:0]
			} else {
				g.line = append(g.line, chunk...)
			}
		}
		if i >= 0 {
			if !g.skipping {
				g.follow(g.line)
			}
			g.line, g.skipping = g.line[:0], false
		}
	}
	return n, err
}

// guidedFrame is what the guide reads of one reply or notification.
type guidedFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		ProtocolVersion string `json:"protocolVersion"`
		SessionID       string `json:"sessionId"`
		RunID           string `json:"runId"`
	} `json:"result"`
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
}

func (g *pasteGuide) follow(line []byte) {
	var f guidedFrame
	if json.Unmarshal(line, &f) != nil {
		return
	}
	switch {
	case f.Result != nil && f.Result.ProtocolVersion != "":
		g.say("next, a new chat (nothing is written to disk before its first prompt)",
			`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"workspaceId":null}}`)
	case f.Result != nil && f.Result.SessionID != "" && f.Result.RunID == "" && g.sessionID == "":
		g.sessionID = f.Result.SessionID
		g.say("next, a prompt to that session; its answer streams back as session/message notifications",
			fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"requestId":"r1","text":"hello"}}`, g.sessionID))
	case f.Method == "session/request_approval" && len(f.ID) > 0:
		g.say("the agent asks to run a tool; to allow it once",
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"decision":"allowed-once"}}`, f.ID))
	case f.Method == "session/agent_settled" && f.Params.SessionID != "" && f.Params.SessionID == g.sessionID:
		g.say("the run has settled; the whole session, saved, with (Ctrl-D ends the server)",
			fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/get","params":{"sessionId":%q}}`, g.sessionID))
	}
}

func (g *pasteGuide) say(what, request string) {
	fmt.Fprintf(g.hint, "loop: %s:\n%s\n", what, request)
}
