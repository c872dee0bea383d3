package rpc_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Params over 1 MiB are refused for every method but prompts and queue
// edits, whose text and attachments have no limit.
func TestParamsSizeLimit(t *testing.T) {
	c := startServer(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`)
	sid := c.newSession()
	big := strings.Repeat("x", 1100000)
	id := c.send("session/set_title", map[string]any{"sessionId": sid, "title": big})
	line := c.readUntil(fmt.Sprintf(`"id":%d,`, id))
	if !strings.Contains(line, `"code":"invalid_params"`) || !strings.Contains(line, "larger than") {
		t.Fatalf("set_title with 1.1 MB: %s", line)
	}
	id = c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": "r", "text": big})
	line = c.promptSettled(id)
	if !strings.Contains(line, `"runId"`) {
		t.Fatalf("a 1.1 MB prompt must be accepted: %.300s", line)
	}
}

// An abort sent right after a prompt is never handled before it: the run
// it cancels is the one the prompt started.
func TestAbortAfterPromptIsOrdered(t *testing.T) {
	c := startServer(t, `{"turns":[{"steps":[{"hang":true}]}]}`)
	sid := c.newSession()
	pid := c.send("session/prompt", map[string]any{"sessionId": sid, "requestId": "r", "text": "go"})
	aid := c.send("session/abort", map[string]any{"sessionId": sid})
	var promptReply, abortReply string
	for promptReply == "" || abortReply == "" {
		line := c.readUntil(`"id":`)
		switch {
		case strings.Contains(line, fmt.Sprintf(`"id":%d,`, pid)):
			promptReply = line
		case strings.Contains(line, fmt.Sprintf(`"id":%d,`, aid)):
			abortReply = line
		}
	}
	var abort struct {
		Result struct {
			Operation string `json:"operation"`
			State     struct {
				PromptTimings []struct {
					Stopped bool `json:"stopped"`
				} `json:"promptTimings"`
			} `json:"state"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(abortReply), &abort); err != nil {
		t.Fatal(err)
	}
	if abort.Result.Operation != "idle" || len(abort.Result.State.PromptTimings) != 1 || !abort.Result.State.PromptTimings[0].Stopped {
		t.Fatalf("abort did not stop the prompt's run: %.400s", abortReply)
	}
}
