package native

import (
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/store"
)

// Converters from the engine's values. Each copies every field the protocol
// shows, member by member: a field added to an engine type reaches the wire
// only when it is added here (and to docs/protocol.md). A nil slice stays
// nil and an empty one empty, since the protocol writes them differently
// (null and []).

// each converts every element of in; nil stays nil.
func each[T, U any](in []T, f func(*T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

// WorkspaceOf converts a workspace.
func WorkspaceOf(w *engine.Workspace) Workspace {
	return Workspace{ID: w.ID, Name: w.Name, Cwd: w.Cwd}
}

// WorkspacesOf converts a list of workspaces.
func WorkspacesOf(ws []engine.Workspace) []Workspace { return each(ws, WorkspaceOf) }

// ModelRefOf converts a model identity; nil stays nil.
func ModelRefOf(r *engine.ModelRef) *ModelRef {
	if r == nil {
		return nil
	}
	return &ModelRef{Provider: r.Provider, ID: r.ID}
}

// ModelOf converts a configured model.
func ModelOf(m *engine.Model) Model {
	return Model{Provider: m.Provider, ID: m.ID, Name: m.Name, ContextWindow: m.ContextWindow,
		MaxOutputTokens: m.MaxOutputTokens, Images: m.Images, Efforts: m.Efforts, API: m.API,
		Cost: (*Prices)(m.Cost)}
}

// ModelsOf converts a list of models.
func ModelsOf(ms []engine.Model) []Model { return each(ms, ModelOf) }

// SkillOf converts a skill.
func SkillOf(s *engine.Skill) Skill {
	return Skill{Name: s.Name, Description: s.Description, Source: s.Source}
}

// SkillsOf converts a list of skills.
func SkillsOf(ss []engine.Skill) []Skill { return each(ss, SkillOf) }

// MessageOf converts a history message; TestWireMessageCarriesEveryField
// fails when a field of convo.Message is not copied.
func MessageOf(m *convo.Message) Message {
	out := Message{
		Role: m.Role, Content: BlocksOf(clientBlocks(m.Content)), Timestamp: m.Timestamp,
		RequestID: m.RequestID, Skills: m.Skills,
		Provider: m.Provider, Model: m.Model, StopReason: m.StopReason, ErrorMessage: m.ErrorMessage,
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError,
	}
	if m.Usage != nil {
		u := Usage(*m.Usage) // the same fields: one added to convo.Usage alone stops the build
		out.Usage = &u
	}
	return out
}

// clientBlocks leaves out what Loop added to a user message for the model
// alone (convo.AttachmentContext: docs/protocol.md, "Message"); it copies
// only when there is something to leave out.
func clientBlocks(bs []convo.Block) []convo.Block {
	n := 0
	for i := range bs {
		if bs[i].Attachment != convo.AttachmentContext {
			n++
		}
	}
	if n == len(bs) {
		return bs
	}
	out := make([]convo.Block, 0, n)
	for _, b := range bs {
		if b.Attachment != convo.AttachmentContext {
			out = append(out, b)
		}
	}
	return out
}

// messagePtr converts a message that may be absent.
func messagePtr(m *convo.Message) *Message {
	if m == nil {
		return nil
	}
	out := MessageOf(m)
	return &out
}

// BlockOf converts a content block. Block has convo.Block's fields in
// order, so this is a conversion: a field added to one and not the other
// stops the build.
func BlockOf(b *convo.Block) Block { return Block(*b) }

// BlocksOf converts content blocks.
func BlocksOf(bs []convo.Block) []Block { return each(bs, BlockOf) }

// ImageOf converts an image attachment.
func ImageOf(im *engine.Image) Image {
	return Image{Type: im.Type, Data: im.Data, MimeType: im.MimeType}
}

// EngineImages converts decoded image params for the engine; nil stays nil
// (a queue edit that keeps the images) and empty stays empty (one that
// removes them).
func EngineImages(ims []Image) []engine.Image {
	return each(ims, func(im *Image) engine.Image {
		return engine.Image{Type: im.Type, Data: im.Data, MimeType: im.MimeType}
	})
}

// FileOf converts a file attachment.
func FileOf(f *engine.File) File { return File{Name: f.Name, Text: f.Text} }

// QueueItemOf converts a queue item.
func QueueItemOf(it *engine.QueueItem) QueueItem {
	return QueueItem{ID: it.ID, RunID: it.RunID, Text: it.Text, Images: each(it.Images, ImageOf),
		Files: each(it.Files, FileOf), Skills: it.Skills, Held: it.Held, HoldID: it.HoldID,
		Steer: it.Steer, QueuedAt: it.QueuedAt}
}

// QueueOf converts a queue.
func QueueOf(q []engine.QueueItem) []QueueItem { return each(q, QueueItemOf) }

// PromptTimingOf converts a prompt timing.
func PromptTimingOf(t *store.PromptTiming) PromptTiming {
	return PromptTiming{ID: t.ID, UserMessageIndex: t.UserMessageIndex, MessageStartIndex: t.MessageStartIndex.Ptr(),
		MessageEndIndex: t.MessageEndIndex.Ptr(), StartedAt: t.StartedAt, FinishedAt: t.FinishedAt.Ptr(), Stopped: t.Stopped,
		Usage: usagePtr(&t.Usage), Interrupted: t.Interrupted}
}

// UsageSumOf converts a total of model calls.
func UsageSumOf(u *convo.UsageSum) UsageTotals {
	out := UsageTotals{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
		TotalTokens: u.TotalTokens, Calls: u.Calls}
	if u.CostKnown() {
		c := u.Cost
		out.Cost = &c
	}
	return out
}

// usagePtr is UsageSumOf, nil for no calls.
func usagePtr(u *convo.UsageSum) *UsageTotals {
	if u.IsZero() {
		return nil
	}
	out := UsageSumOf(u)
	return &out
}

// SessionUsageOf converts a session's usage ledger.
func SessionUsageOf(u *convo.SessionUsage) UsageTotals {
	out := UsageSumOf(&u.UsageSum)
	out.Title, out.Compaction = usagePtr(&u.Title), usagePtr(&u.Compaction)
	return out
}

// BudgetOf converts a session's limits.
func BudgetOf(b *store.Budget) Budget {
	return Budget{SessionTokens: b.SessionTokens.Ptr(), SessionCost: b.SessionCost.Ptr(),
		PromptTokens: b.PromptTokens.Ptr(), PromptCost: b.PromptCost.Ptr()}
}

// CompactionMetaOf converts compaction metadata; nil stays nil.
func CompactionMetaOf(c *store.CompactionMeta) *CompactionMeta {
	if c == nil {
		return nil
	}
	return &CompactionMeta{ID: c.ID, MessageCount: c.MessageCount, TokensBefore: c.TokensBefore, CreatedAt: c.CreatedAt}
}

// ErrorInfoOf converts a failure; nil stays nil.
func ErrorInfoOf(e *engine.ErrorInfo) *ErrorInfo {
	if e == nil {
		return nil
	}
	out := errorInfo(e)
	return &out
}

func errorInfo(e *engine.ErrorInfo) ErrorInfo {
	return ErrorInfo{Code: string(e.Code), Message: e.Message, Errors: each(e.Errors, errorInfo)}
}

func toolStatus(t *engine.ToolStatus) ToolStatus {
	return ToolStatus{ToolCallID: t.ToolCallID, Name: t.Name, Status: t.Status}
}

func approvalOutcome(a *engine.ApprovalOutcome) *ApprovalOutcome {
	if a == nil {
		return nil
	}
	return &ApprovalOutcome{ApprovalID: a.ApprovalID, Tool: a.Tool, Server: a.Server, Decision: a.Decision, At: a.At}
}

func mcpServerStatus(s *mcp.ServerStatus) McpServerStatus {
	return McpServerStatus{Name: s.Name, Transport: s.Transport, State: s.State, Error: s.Error,
		LastError: s.LastError, Restarts: s.Restarts, Tools: s.Tools, Disabled: s.Disabled}
}

// SnapshotOf converts a session's snapshot; nil stays nil.
func SnapshotOf(s *engine.Snapshot) *Snapshot {
	if s == nil {
		return nil
	}
	var info *Model
	if s.ModelInfo != nil {
		m := ModelOf(s.ModelInfo)
		info = &m
	}
	return &Snapshot{
		SessionID: s.SessionID, WorkspaceID: s.WorkspaceID, Cwd: s.Cwd,
		Model: ModelRefOf(s.Model), ModelInfo: info, Efforts: s.Efforts, Effort: s.Effort,
		State:     stateOf(&s.State),
		Operation: s.Operation, RunID: s.RunID, RequestID: s.RequestID,
		Tools: each(s.Tools, toolStatus), LastApproval: approvalOutcome(s.LastApproval), Draft: s.Draft,
		MCPServers: each(s.MCPServers, mcpServerStatus), Parent: ParentOf(s.Parent),
	}
}

// ParentOf converts a fork's parent; nil stays nil.
func ParentOf(p *store.ParentRef) *Parent {
	if p == nil {
		return nil
	}
	return &Parent{SessionID: p.SessionID, MessageCount: p.MessageCount}
}

func stateOf(st *engine.State) State {
	return State{
		Messages: each(st.Messages, MessageOf), MessagesFrom: st.MessagesFrom, MessageCount: st.MessageCount,
		UserMessageCount: st.UserMessageCount, Streaming: messagePtr(st.Streaming), Unread: st.Unread,
		Queue: QueueOf(st.Queue), CanResume: st.CanResume, HasPendingSave: st.HasPendingSave,
		PromptTimings: each(st.PromptTimings, PromptTimingOf), PromptTimingsFrom: st.PromptTimingsFrom, Compaction: CompactionMetaOf(st.Compaction),
		CompactionStartedAt: st.CompactionStartedAt, PermissionPreset: st.PermissionPreset,
		Title: st.Title, TitleSource: st.TitleSource, TitleError: st.TitleError, PinnedAt: st.PinnedAt,
		Archived: st.Archived, AcceptedRequestIDs: st.AcceptedRequestIDs, LastError: ErrorInfoOf(st.LastError),
		IsWaitingForApproval: st.IsWaitingForApproval,
		Usage:                SessionUsageOf(&st.Usage), Budget: BudgetOf(&st.Budget),
		RecoveryFile: optString(st.RecoveryFile),
		Recovered:    recoveredOf(st.Recovered),
	}
}

// optString is a string that is null on the wire when empty.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// recoveredOf converts state.recovered.
func recoveredOf(r *store.RecoveredRun) *Recovered {
	if r == nil {
		return nil
	}
	return &Recovered{RunID: r.RunID, Messages: r.Messages, InterruptedAt: r.InterruptedAt}
}

// SummaryOf converts a list entry.
func SummaryOf(s *engine.Summary) Summary {
	return Summary{ID: s.ID, WorkspaceID: s.WorkspaceID, Title: s.Title, TitleSource: s.TitleSource,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, MessageCount: s.MessageCount, UserMessageCount: s.UserMessageCount,
		IsGenerating: s.IsGenerating, IsWaitingForApproval: s.IsWaitingForApproval, Unread: s.Unread,
		PinnedAt: s.PinnedAt, Archived: s.Archived, Model: ModelRefOf(s.Model), Usage: SessionUsageOf(&s.Usage),
		Parent: ParentOf(s.Parent)}
}

// SummariesOf converts a list page.
func SummariesOf(ss []engine.Summary) []Summary { return each(ss, SummaryOf) }

// ApprovalRequestOf converts an approval request into the params of
// session/request_approval.
func ApprovalRequestOf(r *engine.ApprovalRequest) ApprovalRequest {
	return ApprovalRequest{SessionID: r.SessionID, ApprovalID: r.ApprovalID, ToolCallID: r.ToolCallID,
		Tool:    ApprovalTool{Name: r.Tool.Name, Server: r.Tool.Server, Input: r.Tool.Input},
		Options: r.Options, Reason: r.Reason}
}

// EventParams converts an event's payload into its notification's params;
// ok is false for a payload the native dialect does not send.
func EventParams(payload any) (params any, ok bool) {
	switch p := payload.(type) {
	case *engine.RunAcceptedEvent:
		return &RunAccepted{SessionID: p.SessionID, RunID: p.RunID, RequestID: p.RequestID, Resumed: p.Resumed, SteeredInto: p.SteeredInto}, true
	case *engine.MessageEvent:
		return &MessageUpdate{SessionID: p.SessionID, RunID: p.RunID, MessageID: p.MessageID, Event: p.Event,
			Role: p.Role, Index: p.Index, Block: p.Block, Type: p.Type, ToolCallID: p.ToolCallID, ToolName: p.ToolName,
			Delta: p.Delta, Message: messagePtr(p.Message)}, true
	case *engine.ToolEvent:
		return &ToolUpdate{SessionID: p.SessionID, RunID: p.RunID, ToolCallID: p.ToolCallID, Name: p.Name, Event: p.Event,
			Input: p.Input, Progress: p.Progress, IsError: p.IsError, Result: BlocksOf(p.Result), Details: p.Details}, true
	case *engine.RetryEvent:
		return &RetryUpdate{SessionID: p.SessionID, RunID: p.RunID, Attempt: p.Attempt, Of: p.Of,
			DelayMs: p.Delay.Milliseconds(), Status: p.Status, Message: p.Message}, true
	case *engine.QueueChangedEvent:
		return &QueueChanged{SessionID: p.SessionID, Queue: QueueOf(p.Queue)}, true
	case *engine.PromptTimingEvent:
		return &PromptTimingUpdate{SessionID: p.SessionID, Event: p.Event, Timing: PromptTimingOf(&p.Timing)}, true
	case *engine.AgentSettledEvent:
		return &AgentSettled{SessionID: p.SessionID, RunID: p.RunID, RequestID: p.RequestID, Outcome: p.Outcome,
			Error: ErrorInfoOf(p.Error), SteeredInto: p.SteeredInto}, true
	case *engine.StateEvent:
		return &StateUpdate{SessionID: p.SessionID, Snapshot: SnapshotOf(p.Snapshot())}, true
	case *engine.SessionsChangedEvent:
		var sum *Summary
		if p.Summary != nil {
			s := SummaryOf(p.Summary)
			sum = &s
		}
		return &SessionsChanged{WorkspaceID: p.WorkspaceID, SessionID: p.SessionID, Reason: p.Reason, Summary: sum, Deleted: p.Deleted}, true
	}
	return nil, false
}

// SearchResultOf converts a page of search hits.
func SearchResultOf(r engine.SearchResult) SearchResult {
	out := SearchResult{NextCursor: r.NextCursor, Hits: make([]SearchHit, 0, len(r.Hits))}
	for _, h := range r.Hits {
		ranges := make([]SearchRange, 0, len(h.Ranges))
		for _, g := range h.Ranges {
			ranges = append(ranges, SearchRange{Start: g.Start, End: g.End})
		}
		out.Hits = append(out.Hits, SearchHit{SessionID: h.SessionID, WorkspaceID: h.WorkspaceID, Title: h.Title,
			MessageIndex: h.MessageIndex, Role: h.Role, Snippet: h.Snippet, Ranges: ranges, UpdatedAt: h.UpdatedAt})
	}
	return out
}

// RestoreFilesResultOf converts the engine's RestoreResult.
func RestoreFilesResultOf(r engine.RestoreResult) *RestoreFilesResult {
	return &RestoreFilesResult{Restored: r.Restored, Conflicts: r.Conflicts}
}

// ChangesResultOf converts the engine's runs.
func ChangesResultOf(runs []engine.RunChanges) *ChangesResult {
	out := &ChangesResult{Runs: make([]RunChanges, 0, len(runs))}
	for _, r := range runs {
		rc := RunChanges{RunID: r.RunID, MessageStartIndex: r.MessageStartIndex, MessageEndIndex: r.MessageEndIndex,
			Files: make([]ChangedFile, 0, len(r.Files)), BashNotCovered: r.BashNotCovered}
		for _, f := range r.Files {
			rc.Files = append(rc.Files, ChangedFile(f))
		}
		out.Runs = append(out.Runs, rc)
	}
	return out
}
