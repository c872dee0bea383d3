package acp_test

import (
	"encoding/json"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/loopdev/loop/internal/tools"
)

// shellLine has spaces, a pipe, both kinds of quotes and a variable: every
// way a command line is more than one program name.
const shellLine = `printf '%s\n' "two words" | tr a-z A-Z; echo "it's $((40+2))"`

// TestTerminalCreateRunsEveryCommandLine: a client that follows ACP's
// schema (command a program, args its arguments, no shell) gets the shell
// bash uses and -c with the line; Zed, which joins command and args through
// its own shell without quoting, gets the whole line as command. In both
// the line runs as written.
func TestTerminalCreateRunsEveryCommandLine(t *testing.T) {
	script, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"match": "run", "steps": []any{map[string]any{"toolCall": map[string]any{"id": "b1", "name": "bash", "arguments": map[string]any{"command": shellLine}}}}},
		map[string]any{"match": "run", "steps": []any{map[string]any{"text": "ran"}}},
	}})
	for _, tc := range []struct {
		client  string
		command string
		args    []any
	}{
		{"acpx", tools.Shell(), []any{"-c", shellLine}},
		{"zed", shellLine, nil},
	} {
		t.Run(tc.client, func(t *testing.T) {
			h := newHarness(t, string(script))
			c := h.connect()
			c.rec.zed = tc.client == "zed"
			c.initializeAs(tc.client, sdk.ClientCapabilities{Terminal: true})
			ns := c.newSession()
			// full-access: a preset with an OS sandbox runs bash in Loop.
			if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "full-access"}); err != nil {
				t.Fatal(err)
			}
			if stop := c.mustPrompt(ns.SessionId, "run"); stop != sdk.StopReasonEndTurn {
				t.Fatalf("stopReason %q", stop)
			}
			var params map[string]any
			for _, f := range c.frames.all() {
				if f["method"] == "terminal/create" {
					params, _ = f["params"].(map[string]any)
				}
			}
			if params["command"] != tc.command || dump(params["args"]) != dump(tc.args) {
				t.Fatalf("terminal/create: %s", dump(params))
			}
			sess, err := h.eng.Session(string(ns.SessionId))
			if err != nil {
				t.Fatal(err)
			}
			if got := toolResult(t, sess.Snapshot().State.Messages, "b1"); got != "TWO WORDS\nit's 42\n\n[exit code 0]" {
				t.Fatalf("bash result %q", got)
			}
		})
	}
}
