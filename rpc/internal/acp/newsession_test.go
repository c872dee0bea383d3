package acp_test

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestNewSessionLoadsInTheNextProcess: a session made with session/new,
// and the mode and config options set on it before any prompt, open from
// the next process (acpx runs `sessions new`, `set-mode` and `prompt` as
// three). Sessions without a prompt stay out of session/list, in this
// process and the next, so clients that open sessions and abandon them
// do not fill it.
func TestNewSessionLoadsInTheNextProcess(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"hi","steps":[{"text":"hello"}]}]}`)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	abandoned := c.newSession()
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.SetSessionConfigOption(ctx(t), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: ns.SessionId, ConfigId: "effort", Value: "high",
	}}); err != nil {
		t.Fatal(err)
	}
	listed := func(c *client) []string {
		t.Helper()
		list, err := c.cs.ListSessions(ctx(t), sdk.ListSessionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range list.Sessions {
			ids = append(ids, string(s.SessionId))
		}
		return ids
	}
	if ids := listed(c); len(ids) != 0 {
		t.Fatalf("sessions without a prompt are listed: %v", ids)
	}

	current := func(opts []sdk.SessionConfigOption) map[string]string {
		out := map[string]string{}
		for _, o := range opts {
			out[string(o.Select.Id)] = string(o.Select.CurrentValue)
		}
		return out
	}
	h.restart()
	c2 := h.connect()
	c2.initialize()
	if ids := listed(c2); len(ids) != 0 {
		t.Fatalf("sessions without a prompt are listed after a restart: %v", ids)
	}
	res, err := c2.cs.ResumeSession(ctx(t), sdk.ResumeSessionRequest{SessionId: ns.SessionId, Cwd: h.work})
	if err != nil {
		t.Fatalf("session/resume in the next process: %v", err)
	}
	if res.Modes == nil || res.Modes.CurrentModeId != "ask" {
		t.Fatalf("mode after a restart: %s", dump(res.Modes))
	}
	if cur := current(res.ConfigOptions); cur["mode"] != "ask" || cur["model"] != "fake/m1" || cur["effort"] != "high" {
		t.Fatalf("config options after a restart: %v", cur)
	}
	if stop := c2.mustPrompt(ns.SessionId, "hi"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	if ids := listed(c2); len(ids) != 1 || ids[0] != string(ns.SessionId) {
		t.Fatalf("list after the first prompt: %v", ids)
	}

	h.restart()
	c3 := h.connect()
	c3.initialize()
	// The abandoned one still loads by id; it only stays out of the list.
	if _, err := c3.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: abandoned.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load of a session without a prompt: %v", err)
	}
	if ids := listed(c3); len(ids) != 1 || ids[0] != string(ns.SessionId) {
		t.Fatalf("list after a load: %v", ids)
	}
}
