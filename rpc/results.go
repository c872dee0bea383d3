package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// The native dialect's results and server requests, built from the
// engine's values as the wire types of package native (docs/protocol.md
// sections 5 and 6). Every method answers through one of these, so the
// golden tests (golden_test.go) see exactly what a client reads.

func snapshotResult(s *engine.Snapshot) *native.Snapshot { return native.SnapshotOf(s) }

// snapshotReply answers a command that returns the session's snapshot.
func snapshotReply(s *engine.Snapshot, err error) (*native.Snapshot, error) {
	if err != nil {
		return nil, err
	}
	return snapshotResult(s), nil
}

func initializeResult(version, streamID, framing string, sb engine.SandboxStatus) *native.InitializeResult {
	return &native.InitializeResult{
		Capabilities: native.Capabilities{
			Approvals: true, DeltaMerging: true, Files: true, Framing: framing, Images: true,
			Independent: true, Notifications: native.EventNotifications(), Queue: true,
			Sandbox: native.Sandbox(sb),
		},
		ProtocolVersion: ProtocolVersion,
		ServerInfo:      native.ServerInfo{Name: "loop", Version: version},
		StreamID:        streamID,
	}
}

func workspaceResult(ws engine.Workspace) *native.WorkspaceResult {
	return &native.WorkspaceResult{Workspace: native.WorkspaceOf(&ws)}
}

func workspacesResult(ws []engine.Workspace) *native.WorkspacesResult {
	out := native.WorkspacesOf(ws)
	if out == nil {
		out = []native.Workspace{}
	}
	return &native.WorkspacesResult{Workspaces: out}
}

func modelsResult(models []engine.Model, configErr error) *native.ModelsResult {
	out := &native.ModelsResult{Models: native.ModelsOf(models)}
	if configErr != nil {
		out.ConfigError = configErr.Error()
	}
	return out
}

func sessionsResult(page []engine.Summary, next string) *native.SessionsResult {
	return &native.SessionsResult{NextCursor: next, Sessions: native.SummariesOf(page)}
}

func promptResult(r engine.PromptResult) *native.PromptResult {
	return &native.PromptResult{RunID: r.RunID, RequestID: r.RequestID, Queued: r.Queued}
}

func resumeResult(r engine.PromptResult) *native.ResumeResult {
	return &native.ResumeResult{RunID: r.RunID}
}

func queueItemResult(it *engine.QueueItem) *native.QueueItemResult {
	out := &native.QueueItemResult{}
	if it != nil {
		item := native.QueueItemOf(it)
		out.Item = &item
	}
	return out
}

func markReadResult(read bool) *native.MarkReadResult { return &native.MarkReadResult{Read: read} }

func pinnedResult(at *string) *native.PinnedResult { return &native.PinnedResult{PinnedAt: at} }

func skillsResult(skills []engine.Skill) *native.SkillsResult {
	out := native.SkillsOf(skills)
	if out == nil {
		out = []native.Skill{}
	}
	return &native.SkillsResult{Skills: out}
}

// approvalParams are the params of session/request_approval.
func approvalParams(req engine.ApprovalRequest) *native.ApprovalRequest {
	out := native.ApprovalRequestOf(&req)
	return &out
}
