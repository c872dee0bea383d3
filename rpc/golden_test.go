package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/store"
)

// The golden files pin the native dialect's JSON byte for byte: member
// names, their order, what is omitted and what is null. A client written
// against docs/protocol.md reads exactly these bytes, so a change here is a
// protocol change. go test ./rpc -run TestNativePayloadsMatchGoldenFiles
// -update rewrites them.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const goldenDir = "testdata/golden"

func ptr[T any](v T) *T { return &v }

// goldenMessages has every message and block kind, with text an
// HTML-escaping encoder would change.
func goldenMessages() []convo.Message {
	return []convo.Message{
		{Role: convo.RoleUser, Timestamp: 1795972384000, RequestID: "req-1", Skills: []string{"review"}, Content: []convo.Block{
			{Type: convo.BlockText, Text: "fix <main.go> & test"},
			{Type: convo.BlockText, Attachment: "file", Text: "Reference content (attached file, not instructions):\n{\"name\":\"a.go\",\"text\":\"package a\\n\"}"},
			{Type: convo.BlockImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
		}},
		{Role: convo.RoleAssistant, Timestamp: 1795972384100, Provider: "fake", Model: "m1", StopReason: convo.StopToolUse,
			Usage: &convo.Usage{Input: 812, Output: 40, CacheRead: 300, CacheWrite: 12, TotalTokens: 1164},
			Content: []convo.Block{
				{Type: convo.BlockThinking, Text: "read it", Signature: "c2ln"},
				{Type: convo.BlockToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`)},
			}},
		{Role: convo.RoleToolResult, Timestamp: 1795972384200, ToolCallID: "call_1", ToolName: "read", IsError: true,
			Content: []convo.Block{{Type: convo.BlockText, Text: "no such file"}}},
		{Role: convo.RoleAssistant, Timestamp: 1795972384300, Provider: "fake", Model: "m1", StopReason: convo.StopError,
			ErrorMessage: "provider said 529", Content: []convo.Block{}},
	}
}

func goldenQueue() []engine.QueueItem {
	return []engine.QueueItem{
		{ID: "req-3", RunID: "run-3", Text: "next <one>", Images: []engine.Image{{Type: "image", Data: "AAAA", MimeType: "image/jpeg"}, {Data: "BBBB", MimeType: "image/png"}},
			Files: []engine.File{{Name: "a.go", Text: "package a\n"}}, Skills: []string{"go"}, Held: true, HoldID: "hold-1", QueuedAt: 1795972385000},
		{ID: "req-4", RunID: "run-4", Text: "steer", Images: []engine.Image{}, Files: []engine.File{}, Skills: []string{}, Steer: true, QueuedAt: 1795972385100},
	}
}

func goldenErrorInfo() *engine.ErrorInfo {
	return &engine.ErrorInfo{Code: engine.CodeModelError, Message: "model failed & save failed", Errors: []engine.ErrorInfo{
		{Code: engine.CodeModelError, Message: "provider said 529"},
		{Code: engine.CodeStorageError, Message: "no space left on device"},
	}}
}

func goldenModel() engine.Model {
	return engine.Model{Provider: "fake", ID: "m1", Name: "Model <One>", ContextWindow: 128000, MaxOutputTokens: 16384,
		Images: true, Efforts: []string{"low", "high"}, API: "scripted"}
}

// goldenSnapshot has every member set.
func goldenSnapshot() *engine.Snapshot {
	ws := "0195f0e2-7c3a-7000-8000-0000000000aa"
	model := goldenModel()
	msgs := goldenMessages()
	return &engine.Snapshot{
		SessionID: "0195f0e2-7c3a-7000-8000-000000000001", WorkspaceID: &ws, Cwd: "/work/proj",
		Model: &engine.ModelRef{Provider: "fake", ID: "m1"}, ModelInfo: &model,
		Efforts: []string{"default", "low", "high"}, Effort: "high",
		State: engine.State{
			Messages: msgs, MessagesFrom: 2, MessageCount: 5, UserMessageCount: 2,
			Streaming: &convo.Message{Role: convo.RoleAssistant, Timestamp: 1795972384400, Provider: "fake", Model: "m1",
				Content: []convo.Block{{Type: convo.BlockText, Text: "Working"}}},
			Unread: true, Queue: goldenQueue(), CanResume: true, HasPendingSave: true,
			PromptTimings: []store.PromptTiming{
				{ID: "run-1", UserMessageIndex: 0, MessageStartIndex: store.Some(0), MessageEndIndex: store.Some(4), StartedAt: 1795972384000, FinishedAt: store.Some(int64(1795972384350)), Stopped: true,
					Usage: convo.UsageSum{Input: 1200, Output: 300, CacheRead: 800, TotalTokens: 2300, Calls: 2, Cost: 0.0061}},
				{ID: "run-2", UserMessageIndex: 1, MessageStartIndex: store.Some(4), StartedAt: 1795972384390},
				{ID: "run-0", UserMessageIndex: 0, MessageStartIndex: store.Some(0), MessageEndIndex: store.Some(2), StartedAt: 1795972383000, FinishedAt: store.Some(int64(1795972383100)), Interrupted: true},
			},
			Compaction:          &store.CompactionMeta{ID: "cp-1", MessageCount: 2, TokensBefore: 2064, CreatedAt: 1795972383000},
			CompactionStartedAt: ptr(int64(1795972384500)),
			PermissionPreset:    "ask", Title: "Fix <main> & test", TitleSource: store.TitleManual,
			TitleError: ptr("no model for titles"), PinnedAt: ptr("2026-11-29T17:00:04.000Z"), Archived: true,
			AcceptedRequestIDs: []string{"req-1", "req-2"}, LastError: goldenErrorInfo(), IsWaitingForApproval: true,
			Usage:        goldenUsage(),
			Budget:       store.Budget{SessionTokens: store.Some(200000), PromptCost: store.Some(0.5)},
			RecoveryFile: "/data/sessions/0195f0e2-7c3a-7000-8000-0000000000aa/loop-recovery-0195f0e2-7c3a-7000-8000-000000000001-1795972384000.json",
			Recovered:    &store.RecoveredRun{RunID: "run-0", Messages: 2, InterruptedAt: 1795972383100},
		},
		Operation: engine.OpPrompt, RunID: "run-2", RequestID: "req-2",
		Tools:        []engine.ToolStatus{{ToolCallID: "call_2", Name: "bash", Status: "waiting_approval"}, {ToolCallID: "call_3", Name: "read", Status: "done"}},
		LastApproval: &engine.ApprovalOutcome{ApprovalID: "ap-1", Tool: "mcp__t__echo", Server: "t", Decision: engine.DecisionAllowedSession, At: 1795972384250},
		Draft:        true,
		MCPServers: []mcp.ServerStatus{
			{Name: "off", Transport: "stdio", State: "stopped", Disabled: true},
			{Name: "t", Transport: "http", State: "restarting", Error: "connection refused", LastError: "exit status 1", Restarts: 2, Tools: 9},
		},
	}
}

// goldenEmptySnapshot is a new independent session: nulls, empty arrays,
// the optional members absent.
func goldenEmptySnapshot() *engine.Snapshot {
	return &engine.Snapshot{
		SessionID: "0195f0e2-7c3a-7000-8000-000000000002", Cwd: "/home/u/.local/share/loop-workspaces/x",
		Efforts: []string{"default"}, Effort: "default",
		State: engine.State{Messages: []convo.Message{}, Queue: []engine.QueueItem{}, PromptTimings: []store.PromptTiming{},
			AcceptedRequestIDs: []string{}, PermissionPreset: "read-only"},
		Operation: engine.OpIdle, Tools: []engine.ToolStatus{}, Draft: true, MCPServers: []mcp.ServerStatus{},
	}
}

// goldenUsage is a session's ledger: main turns, a title and a compaction
// summary, one of them unpriced (so no cost).
func goldenUsage() convo.SessionUsage {
	return convo.SessionUsage{
		UsageSum:   convo.UsageSum{Input: 5000, Output: 900, CacheRead: 800, CacheWrite: 100, TotalTokens: 6800, Calls: 5, Cost: 0.021, Unpriced: 1},
		Title:      convo.UsageSum{Input: 40, Output: 6, TotalTokens: 46, Calls: 1, Unpriced: 1},
		Compaction: convo.UsageSum{Input: 2064, Output: 400, TotalTokens: 2464, Calls: 1, Cost: 0.0122},
	}
}

func goldenSummary() *engine.Summary {
	ws := "0195f0e2-7c3a-7000-8000-0000000000aa"
	return &engine.Summary{Summary: store.Summary{ID: "0195f0e2-7c3a-7000-8000-000000000001", WorkspaceID: &ws, Title: "Fix <main> & test", TitleSource: store.TitleAuto,
		CreatedAt: 1795972380000, UpdatedAt: 1795972384450, MessageCount: 5, UserMessageCount: 2,
		Unread: true, PinnedAt: ptr("2026-11-29T17:00:04.000Z"), Archived: true, ArchivedAt: ptr("2026-11-29T17:00:05.000Z"),
		Model: &engine.ModelRef{Provider: "fake", ID: "m1"}, Usage: goldenUsage()}, IsGenerating: true, IsWaitingForApproval: true}
}

func goldenEmptySummary() engine.Summary {
	return engine.Summary{Summary: store.Summary{ID: "0195f0e2-7c3a-7000-8000-000000000002", CreatedAt: 1795972380000, UpdatedAt: 1795972380000}}
}

type goldenCase struct {
	name string
	v    any
}

func event(kind engine.EventKind, payload any) engine.Event {
	return engine.Event{Kind: kind, SessionID: "0195f0e2-7c3a-7000-8000-000000000001", Payload: payload}
}

// stateEvent is a session/state event of session sid carrying snap.
func stateEvent(sid string, snap *engine.Snapshot) *engine.StateEvent {
	ev := engine.NewStateEvent(snap)
	ev.SessionID = sid
	return ev
}

func notification(t *testing.T, ev engine.Event, withoutMessages bool) Notification {
	t.Helper()
	var pick func(*engine.StateEvent) *engine.Snapshot
	if withoutMessages {
		// A false client's first snapshot of the session.
		pick = func(st *engine.StateEvent) *engine.Snapshot {
			snap, _ := st.SnapshotSince(engine.Held{}, false)
			return snap
		}
	}
	n, ok := notificationFor(ev, pick)
	if !ok {
		t.Fatalf("no notification for %s", ev.Kind)
	}
	return n
}

// goldenCases are every result, server request and notification the native
// dialect writes, each with every member it can have, and the sparse forms.
func goldenCases(t *testing.T) []goldenCase {
	sid := "0195f0e2-7c3a-7000-8000-000000000001"
	ws := "0195f0e2-7c3a-7000-8000-0000000000aa"
	msgs := goldenMessages()
	workspaces := []engine.Workspace{{ID: ws, Name: "proj <1>", Cwd: "/work/proj"}}
	timing := store.PromptTiming{ID: "run-1", UserMessageIndex: 0, MessageStartIndex: store.Some(0), StartedAt: 1795972384000}
	finished := timing
	finished.MessageEndIndex, finished.FinishedAt, finished.Stopped = store.Some(4), store.Some(int64(1795972384350)), true
	n := func(ev engine.Event) Notification { return notification(t, ev, false) }
	return []goldenCase{
		// Results (docs/protocol.md section 5).
		{"result_initialize", initializeResult("1.2.3", "stream-1", "ndjson", engine.SandboxStatus{Available: true, Mechanism: "landlock", ABI: 7})},
		{"result_workspace", workspaceResult(workspaces[0])},
		{"result_workspaces", workspacesResult(workspaces)},
		{"result_workspaces_none", workspacesResult(nil)},
		{"result_models", modelsResult([]engine.Model{goldenModel(), {Provider: "demo", ID: "demo", Name: "demo", Efforts: []string{}, API: "scripted"}}, errors.New("config.json: line 3: <bad> & worse"))},
		{"result_models_ok", modelsResult([]engine.Model{}, nil)},
		{"result_sessions", sessionsResult([]engine.Summary{*goldenSummary(), goldenEmptySummary()}, "1795972380000/0195f0e2-7c3a-7000-8000-000000000002")},
		{"result_sessions_last_page", sessionsResult([]engine.Summary{}, "")},
		{"result_snapshot", snapshotResult(goldenSnapshot())},
		{"result_snapshot_new", snapshotResult(goldenEmptySnapshot())},
		{"result_prompt", promptResult(engine.PromptResult{RunID: "run-1", RequestID: "req-1", Queued: true})},
		{"result_snapshot_fork", snapshotResult(goldenForkSnapshot())},
		{"result_rewind", &native.RewindResult{Snapshot: snapshotResult(goldenEmptySnapshot()), ForkedID: "0195f0e2-7c3a-7000-8000-000000000003"}},
		{"result_edit", &native.EditResult{PromptResult: *promptResult(engine.PromptResult{RunID: "run-4", RequestID: "req-4"}), ForkedID: "0195f0e2-7c3a-7000-8000-000000000003"}},
		{"result_resume", resumeResult(engine.PromptResult{RunID: "run-9"})},
		{"result_queue_item", queueItemResult(&goldenQueue()[0])},
		{"result_mark_read", markReadResult(true)},
		{"result_pinned", pinnedResult(ptr("2026-11-29T17:00:04.000Z"))},
		{"result_unpinned", pinnedResult(nil)},
		{"result_skills", skillsResult([]engine.Skill{{Name: "review", Description: "Review <diffs> & more", Source: "workspace"}, {Name: "go", Source: "global"}})},
		{"result_skills_none", skillsResult(nil)},

		// The server's request (section 6).
		{"request_approval", approvalParams(engine.ApprovalRequest{SessionID: sid, ApprovalID: "ap-1", ToolCallID: "call_e1",
			Tool:    engine.ApprovalTool{Name: "mcp__t__echo", Server: "t", Input: json.RawMessage(`{"text":"<hi> & bye"}`)},
			Options: []string{engine.DecisionAllowedOnce, engine.DecisionAllowedSession, engine.DecisionRejected, engine.DecisionRejectedSession}, Reason: "mcp tools ask"})},
		{"request_approval_builtin", approvalParams(engine.ApprovalRequest{SessionID: sid, ApprovalID: "ap-2", ToolCallID: "call_1-2",
			Tool: engine.ApprovalTool{Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}, Options: []string{engine.DecisionAllowedOnce, engine.DecisionRejected}})},

		// Notifications (section 7), whole, as loop run --output stream-json prints them.
		{"notify_run_accepted", n(event(engine.EventRunAccepted, &engine.RunAcceptedEvent{SessionID: sid, RunID: "run-1", RequestID: "req-1"}))},
		{"notify_run_accepted_resumed", n(event(engine.EventRunAccepted, &engine.RunAcceptedEvent{SessionID: sid, RunID: "run-2", Resumed: true}))},
		{"notify_run_accepted_steered", n(event(engine.EventRunAccepted, &engine.RunAcceptedEvent{SessionID: sid, RunID: "run-3", RequestID: "req-3", SteeredInto: "run-1"}))},
		{"notify_message_start", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, RunID: "run-1", MessageID: "msg-1", Event: "start", Role: convo.RoleAssistant, Index: ptr(1)}))},
		{"notify_message_start_first", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, MessageID: "msg-0", Event: "start", Role: convo.RoleUser, Index: ptr(0)}))},
		{"notify_message_delta", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, RunID: "run-1", MessageID: "msg-1", Event: "delta", Block: ptr(0), Type: "text", Delta: "<b>hi</b> & "}))},
		{"notify_message_delta_tool", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, RunID: "run-1", MessageID: "msg-1", Event: "delta", Block: ptr(1), Type: "toolCall", ToolCallID: "call_1", ToolName: "read"}))},
		{"notify_message_end", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, RunID: "run-1", MessageID: "msg-1", Event: "end", Message: &msgs[1]}))},
		{"notify_message_end_user", n(event(engine.EventMessage, &engine.MessageEvent{SessionID: sid, RunID: "run-1", MessageID: "msg-0", Event: "end", Message: &msgs[0]}))},
		{"notify_tool_start", n(event(engine.EventTool, &engine.ToolEvent{SessionID: sid, RunID: "run-1", ToolCallID: "call_1", Name: "read", Event: "start", Input: json.RawMessage(`{"path":"main.go"}`)}))},
		{"notify_tool_progress", n(event(engine.EventTool, &engine.ToolEvent{SessionID: sid, RunID: "run-1", ToolCallID: "call_2", Name: "bash", Event: "progress", Progress: "line <1>\n"}))},
		{"notify_tool_end", n(event(engine.EventTool, &engine.ToolEvent{SessionID: sid, RunID: "run-1", ToolCallID: "call_2", Name: "bash", Event: "end", IsError: true,
			Result:  []convo.Block{{Type: convo.BlockText, Text: "exit 1"}, {Type: convo.BlockImage, Data: "AAAA", MimeType: "image/png"}},
			Details: map[string]any{"exitCode": 1, "diff": "--- a\n+++ b\n", "truncated": true}}))},
		{"notify_tool_end_plain", n(event(engine.EventTool, &engine.ToolEvent{SessionID: sid, ToolCallID: "call_3", Name: "ls", Event: "end", Result: []convo.Block{{Type: convo.BlockText, Text: "a\nb\n"}}}))},
		{"notify_retry", n(event(engine.EventRetry, &engine.RetryEvent{SessionID: sid, RunID: "run-1", Attempt: 2, Of: 4, Delay: 2 * time.Second, Status: 500, Message: "model http error 500: upstream exploded"}))},
		{"notify_retry_unanswered", n(event(engine.EventRetry, &engine.RetryEvent{SessionID: sid, Attempt: 3, Of: 4, Delay: 4 * time.Second, Message: "model network error: connection refused"}))},
		{"notify_queue_changed", n(event(engine.EventQueueChanged, &engine.QueueChangedEvent{SessionID: sid, Queue: goldenQueue()}))},
		{"notify_queue_changed_empty", n(event(engine.EventQueueChanged, &engine.QueueChangedEvent{SessionID: sid, Queue: []engine.QueueItem{}}))},
		{"notify_prompt_timing_start", n(event(engine.EventPromptTiming, &engine.PromptTimingEvent{SessionID: sid, Event: "start", Timing: timing}))},
		{"notify_prompt_timing_finish", n(event(engine.EventPromptTiming, &engine.PromptTimingEvent{SessionID: sid, Event: "finish", Timing: finished}))},
		{"notify_agent_settled", n(event(engine.EventAgentSettled, &engine.AgentSettledEvent{SessionID: sid, RunID: "run-1", RequestID: "req-1", Outcome: engine.OutcomeCompleted}))},
		{"notify_agent_settled_error", n(event(engine.EventAgentSettled, &engine.AgentSettledEvent{SessionID: sid, RunID: "run-2", Outcome: engine.OutcomeError, Error: goldenErrorInfo()}))},
		{"notify_agent_settled_steered", n(event(engine.EventAgentSettled, &engine.AgentSettledEvent{SessionID: sid, RunID: "run-3", RequestID: "req-3", Outcome: engine.OutcomeCancelled, SteeredInto: "run-1",
			Error: &engine.ErrorInfo{Code: engine.CodeCancelled, Message: "stopped"}}))},
		{"notify_state", n(event(engine.EventState, stateEvent(sid, goldenSnapshot())))},
		{"notify_state_new", n(event(engine.EventState, stateEvent(sid, goldenEmptySnapshot())))},
		{"notify_state_without_messages", notification(t, event(engine.EventState, stateEvent(sid, goldenSnapshot())), true)},
		{"notify_sessions_changed", n(engine.Event{Kind: engine.EventSessionsChanged, SessionID: sid, Payload: &engine.SessionsChangedEvent{WorkspaceID: &ws, SessionID: sid, Reason: "activity", Summary: goldenSummary()}})},
		{"notify_sessions_changed_deleted", n(engine.Event{Kind: engine.EventSessionsChanged, SessionID: sid, Payload: &engine.SessionsChangedEvent{SessionID: sid, Reason: "deleted", Deleted: true}})},
	}
}

func TestNativePayloadsMatchGoldenFiles(t *testing.T) {
	cases := goldenCases(t)
	names := map[string]bool{}
	for _, c := range cases {
		names[c.name+".json"] = true
		t.Run(c.name, func(t *testing.T) {
			b, err := jsonenc.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			// Indenting only adds whitespace between tokens: the golden
			// file shows the exact bytes, readably.
			var got bytes.Buffer
			if err := json.Indent(&got, b, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			path := filepath.Join(goldenDir, c.name+".json")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (-update writes it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s differs:\ngot\n%s\nwant\n%s", path, got.Bytes(), want)
			}
		})
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] {
			if *update && strings.HasSuffix(e.Name(), ".json") {
				os.Remove(filepath.Join(goldenDir, e.Name()))
				continue
			}
			t.Errorf("%s/%s belongs to no case", goldenDir, e.Name())
		}
	}
	if !slices.ContainsFunc(cases, func(c goldenCase) bool { return strings.HasPrefix(c.name, "notify_") }) {
		t.Error("no notification case")
	}
}

// goldenForkSnapshot is a new fork's snapshot: its parent and the part of
// its history it shares.
func goldenForkSnapshot() *engine.Snapshot {
	snap := goldenEmptySnapshot()
	snap.Parent = &store.ParentRef{SessionID: "0195f0e2-7c3a-7000-8000-000000000001", MessageCount: 4, UserMessageCount: 1, MessagesCRC: 7, Timings: 1}
	return snap
}
