package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	loopacp "github.com/loopdev/loop/rpc/internal/acp"
	"github.com/loopdev/loop/rpc/internal/wire"
	"github.com/sourcegraph/jsonrpc2"
)

// lineConn talks to the agent in raw NDJSON lines, for bytes no JSON
// library would send (invalid UTF-8) and for checking frames byte for byte.
type lineConn struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	id  int
}

func (h *harness) connectLines() *lineConn {
	h.t.Helper()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	agent := loopacp.New(h.eng, loopacp.Options{Version: "test", PageSize: h.pageSize})
	stream := wire.New(c2aR, a2cW, wire.Options{DrainTimeout: 2 * time.Second})
	conn := jsonrpc2.NewConn(context.Background(), stream, agent)
	agent.Bind(conn)
	lc := &lineConn{t: h.t, in: c2aW, out: bufio.NewReaderSize(a2cR, 1<<20)}
	h.t.Cleanup(func() {
		_ = c2aW.Close()
		go func() { _, _ = io.Copy(io.Discard, a2cR) }()
		h.awaitAgentClosed(conn, agent)
	})
	return lc
}

// newSession opens a session in cwd and returns its id.
func (lc *lineConn) newSession(cwd string) string {
	lc.t.Helper()
	line := lc.call("session/new", `{"cwd":"`+cwd+`","mcpServers":[]}`)
	i := strings.Index(line, `"sessionId":"`)
	if i < 0 {
		lc.t.Fatalf("session/new: %s", line)
	}
	sid := line[i+len(`"sessionId":"`):]
	return sid[:strings.IndexByte(sid, '"')]
}

// send writes one request whose params are given as raw JSON text.
func (lc *lineConn) send(method, params string) int {
	lc.id++
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", lc.id, method, params)
	if _, err := io.WriteString(lc.in, line); err != nil {
		lc.t.Fatal(err)
	}
	return lc.id
}

// reply reads lines up to the reply to id; it returns that reply and
// every line read, the reply last.
func (lc *lineConn) reply(id int) (string, []string) {
	lc.t.Helper()
	var lines []string
	want := fmt.Sprint(id)
	for {
		line, err := lc.out.ReadString('\n')
		if err != nil {
			lc.t.Fatalf("waiting for the reply to %d: %v (read: %s)", id, err, strings.Join(lines, ""))
		}
		lines = append(lines, line)
		// A reply has the id and no top-level method (a result may hold
		// a member named "method", as initialize's _meta does).
		var frame struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal([]byte(line), &frame) == nil && string(frame.ID) == want && frame.Method == nil {
			return line, lines
		}
	}
}

// call sends a request and returns its reply line.
func (lc *lineConn) call(method, params string) string {
	lc.t.Helper()
	line, _ := lc.reply(lc.send(method, params))
	return line
}
