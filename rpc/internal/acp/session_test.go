package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

type listed struct {
	Sessions []struct {
		SessionID string  `json:"sessionId"`
		Cwd       string  `json:"cwd"`
		UpdatedAt *string `json:"updatedAt"`
	} `json:"sessions"`
	NextCursor *string `json:"nextCursor"`
}

// TestSessionsRaw checks what the SDK cannot send or hides: the error
// objects (ACP codes with data.code), list paging, close and delete.
func TestSessionsRaw(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"hi","steps":[{"text":"a"}]},{"match":"hi","steps":[{"text":"b"}]},{"match":"hi","steps":[{"text":"c"}]}]}`)
	h.pageSize = 2
	rc := h.connectRaw()

	if _, re := rc.call("session/new", map[string]any{"cwd": h.work, "mcpServers": []any{}}); re == nil || re.Code != -32600 || errData(re)["code"] != "not_initialized" {
		t.Fatalf("before initialize: %+v", re)
	}
	if _, re := rc.call("initialize", map[string]any{"protocolVersion": "loop/1"}); re == nil || re.Code != -32602 || errData(re)["code"] != "invalid_params" {
		t.Fatalf("string protocolVersion: %+v", re)
	}
	var ini struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	rc.mustCall("initialize", map[string]any{"protocolVersion": 7, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true}, "terminal": true}}, &ini)
	if ini.ProtocolVersion != 1 {
		t.Fatalf("negotiated %d", ini.ProtocolVersion)
	}
	if _, re := rc.call("session/unarchive", map[string]any{}); re == nil || re.Code != -32601 {
		t.Fatalf("unknown method: %+v", re)
	}
	if _, re := rc.call("session/new", map[string]any{"cwd": "relative/dir", "mcpServers": []any{}}); re == nil || re.Code != -32602 || errData(re)["code"] != "invalid_params" {
		t.Fatalf("relative cwd: %+v", re)
	}

	var ids []string
	for range 3 {
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		// An MCP server of a transport Loop does not take (sse, not
		// advertised) is skipped, and the session still opens.
		rc.mustCall("session/new", map[string]any{"cwd": h.work, "mcpServers": []any{map[string]any{"type": "sse", "name": "x", "url": "http://127.0.0.1:9/sse", "headers": []any{}}}}, &ns)
		var pr struct {
			StopReason string `json:"stopReason"`
		}
		rc.mustCall("session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}, &pr)
		if pr.StopReason != "end_turn" {
			t.Fatalf("stopReason %q", pr.StopReason)
		}
		ids = append(ids, ns.SessionID)
	}

	var page1, page2 listed
	rc.mustCall("session/list", map[string]any{}, &page1)
	if len(page1.Sessions) != 2 || page1.NextCursor == nil {
		t.Fatalf("page 1: %s", dump(page1))
	}
	rc.mustCall("session/list", map[string]any{"cursor": *page1.NextCursor}, &page2)
	if len(page2.Sessions) != 1 || page2.NextCursor != nil {
		t.Fatalf("page 2: %s", dump(page2))
	}
	seen := map[string]bool{}
	for _, s := range append(page1.Sessions, page2.Sessions...) {
		seen[s.SessionID] = true
		if s.Cwd != h.work || s.UpdatedAt == nil {
			t.Fatalf("entry: %s", dump(s))
		}
	}
	// Newest first: the last session made leads.
	if len(seen) != 3 || page1.Sessions[0].SessionID != ids[2] {
		t.Fatalf("pages %s %s, ids %v", dump(page1), dump(page2), ids)
	}
	var other listed
	rc.mustCall("session/list", map[string]any{"cwd": t.TempDir()}, &other)
	if len(other.Sessions) != 0 {
		t.Fatalf("other cwd: %s", dump(other))
	}
	if _, re := rc.call("session/list", map[string]any{"cursor": "nonsense"}); re == nil || re.Code != -32602 {
		t.Fatalf("bad cursor: %+v", re)
	}

	rc.mustCall("session/close", map[string]any{"sessionId": ids[0]}, nil)
	missing := "01900000-0000-7000-8000-000000000000"
	if _, re := rc.call("session/close", map[string]any{"sessionId": missing}); re == nil || re.Code != -32002 {
		t.Fatalf("close of an unknown session: %+v", re)
	}

	rc.mustCall("session/delete", map[string]any{"sessionId": ids[1]}, nil)
	var after listed
	rc.mustCall("session/list", map[string]any{"cwd": h.work}, &after)
	if len(after.Sessions) != 2 {
		t.Fatalf("after delete: %s", dump(after))
	}
	_, re := rc.call("session/load", map[string]any{"sessionId": ids[1], "cwd": h.work, "mcpServers": []any{}})
	if re == nil || re.Code != -32002 || errData(re)["code"] != "session_not_found" || errData(re)["sessionId"] != ids[1] {
		t.Fatalf("load of a deleted session: %+v %v", re, errData(re))
	}
	// A closed session still loads: close frees nothing on disk.
	rc.mustCall("session/load", map[string]any{"sessionId": ids[0], "cwd": h.work, "mcpServers": []any{}}, nil)
}

const permissionCancelScript = `{"turns":[
 {"match":"write","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"x.txt","content":"x"}}}]},
 {"match":"write","steps":[{"text":"unreachable"}]},
 {"match":"again","steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"y.txt","content":"y"}}}]},
 {"match":"again","steps":[{"text":"unreachable"}]}
]}`

// TestCancelDuringPermission: session/cancel while a permission request
// waits withdraws it and answers "cancelled"; a client answering the
// request with outcome "cancelled" cancels the turn too.
func TestCancelDuringPermission(t *testing.T) {
	h := newHarness(t, permissionCancelScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	withdrawn := make(chan struct{})
	c.rec.answer = nil
	c.rec.mu.Lock()
	c.rec.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		<-withdrawn
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}
	}
	c.rec.mu.Unlock()

	done := make(chan sdk.StopReason, 1)
	go func() {
		r, err := c.prompt(ns.SessionId, "write")
		if err != nil {
			t.Error(err)
		}
		done <- r.StopReason
	}()
	waitFor(t, "the permission request", func() bool { return c.rec.permissionCount() == 1 })
	if err := c.cs.Cancel(context.Background(), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-done:
		if stop != sdk.StopReasonCancelled {
			t.Fatalf("stopReason %q", stop)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt was not answered after session/cancel")
	}
	close(withdrawn)
	if _, err := os.Stat(filepath.Join(h.work, "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("x.txt was written: %v", err)
	}
	card := fold(c.frames.updates(string(ns.SessionId)), true).Tools["w1"]
	if card["status"] != "failed" {
		t.Fatalf("card: %s", dump(card))
	}
	var withdrawal bool
	for _, f := range c.frames.all() {
		if f["method"] == "$/cancel_request" {
			withdrawal = true
		}
	}
	if !withdrawal {
		t.Fatal("the permission request was not withdrawn with $/cancel_request")
	}

	// The client itself answers "cancelled": the turn ends cancelled.
	c.rec.mu.Lock()
	c.rec.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}
	}
	c.rec.mu.Unlock()
	if stop := c.mustPrompt(ns.SessionId, "again"); stop != sdk.StopReasonCancelled {
		t.Fatalf("after a cancelled outcome: %q", stop)
	}
	if _, err := os.Stat(filepath.Join(h.work, "y.txt")); !os.IsNotExist(err) {
		t.Fatalf("y.txt was written: %v", err)
	}
}

var _ = json.Marshal

// TestLoadAfterCancelledReplyEndsWithUsage: a reply cancelled mid-stream
// reports no usage, so the replay ends with the usage the client last saw
// live, the one of the reply before it.
func TestLoadAfterCancelledReplyEndsWithUsage(t *testing.T) {
	h := newHarness(t, `{"turns":[
 {"match":"hi","steps":[{"text":"hello"}]},
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]}
]}`)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)
	c.mustPrompt(ns.SessionId, "hi")
	var live map[string]any
	for _, u := range c.frames.updates(sid) {
		if u["sessionUpdate"] == "usage_update" {
			live = u
		}
	}
	if live == nil {
		t.Fatal("no usage_update live")
	}
	done := make(chan sdk.StopReason, 1)
	go func() { r, _ := c.prompt(ns.SessionId, "slow"); done <- r.StopReason }()
	waitFor(t, "the slow reply", func() bool { return strings.Contains(dump(fold(c.frames.updates(sid), true).Messages), "working") })
	if err := c.cs.Cancel(ctx(t), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if stop := <-done; stop != sdk.StopReasonCancelled {
		t.Fatalf("stopReason %q", stop)
	}

	h.restart()
	c2 := h.connect()
	c2.initialize()
	if _, err := c2.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replayed := c2.frames.updates(sid)
	if !strings.Contains(dump(fold(replayed, true).Messages), "working") {
		t.Fatalf("the cancelled reply is not in the replay: %v", kinds(replayed))
	}
	end := replayed[len(replayed)-1]
	if end["sessionUpdate"] != "usage_update" || end["used"] != live["used"] || end["size"] != live["size"] {
		t.Fatalf("the replay ends with %s, want the live usage %s", dump(end), dump(live))
	}
}
