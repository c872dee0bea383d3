package rpc

import "github.com/loopdev/loop/engine"

// The native dialect's results and server requests, built from the
// engine's values (docs/protocol.md sections 5 and 6). Every method answers
// through one of these, so the golden tests (golden_test.go) see exactly
// what a client reads.

func snapshotResult(s *engine.Snapshot) any { return s }

// snapshotReply answers a command that returns the session's snapshot.
func snapshotReply(s *engine.Snapshot, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return snapshotResult(s), nil
}

func initializeResult(version, streamID, framing string) any {
	return map[string]any{
		"serverInfo":      map[string]any{"name": "loop", "version": version},
		"protocolVersion": ProtocolVersion,
		"streamId":        streamID,
		"capabilities": map[string]any{
			"framing":       framing,
			"deltaMerging":  true,
			"queue":         true,
			"approvals":     true,
			"images":        true,
			"files":         true,
			"independent":   true,
			"notifications": []string{"session/run_accepted", "session/message", "session/tool", "session/queue_changed", "session/prompt_timing", "session/agent_settled", "session/state", "sessions/changed"},
		},
	}
}

func workspaceResult(ws engine.Workspace) any { return map[string]any{"workspace": ws} }

func workspacesResult(ws []engine.Workspace) any {
	if ws == nil {
		ws = []engine.Workspace{}
	}
	return map[string]any{"workspaces": ws}
}

func modelsResult(models []engine.Model, configErr error) any {
	out := map[string]any{"models": models}
	if configErr != nil {
		out["configError"] = configErr.Error()
	}
	return out
}

func sessionsResult(page []engine.Summary, next string) any {
	out := map[string]any{"sessions": page}
	if next != "" {
		out["nextCursor"] = next
	}
	return out
}

func promptResult(r engine.PromptResult) any { return r }

func resumeResult(r engine.PromptResult) any { return map[string]any{"runId": r.RunID} }

func queueItemResult(it *engine.QueueItem) any { return map[string]any{"item": it} }

func markReadResult(read bool) any { return map[string]any{"read": read} }

func pinnedResult(at *string) any { return map[string]any{"pinnedAt": at} }

// deleteResult is {} unless an unsaved result was dropped:
// {"droppedPendingSave": true}.
func deleteResult(r engine.DeleteResult) any { return r }

func skillsResult(skills []engine.Skill) any {
	if skills == nil {
		skills = []engine.Skill{}
	}
	return map[string]any{"skills": skills}
}

// approvalParams are the params of session/request_approval.
func approvalParams(req engine.ApprovalRequest) any { return req }
