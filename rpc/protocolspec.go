package rpc

import (
	"encoding/json"
	"reflect"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/internal/schema"
	"github.com/loopdev/loop/rpc/internal/wire"
)

// protocolSpec is the native dialect as package schema describes it
// (`loop protocol schema`, `loop protocol ts`): every method with the Go
// types of its params and result, the server's request, every
// notification, every error code, and what the Go types cannot say
// themselves (closed sets of strings, params with their own decoding).
// It is built only when asked for, never at start-up.
//
// Results and notifications are package native's wire types, the ones
// the server encodes. Most handlers decode into anonymous structs
// (methods.go), so their params are declared here with the same members
// (the named ones, sessionParams, scopedParams, fileParam, are the
// handlers' own); a member tagged omitempty is one a client may leave
// out, as docs/protocol.md's param tables say (protocoldoc_test.go checks
// both). Once every handler is typed, this table lists the handlers'
// own params types instead, and the overrides name their members.
func protocolSpec() schema.Spec {
	type (
		initializeCapabilitiesParams struct {
			StateMessages any `json:"stateMessages,omitempty"`
		}
		initializeParams struct {
			ProtocolVersion string                        `json:"protocolVersion,omitempty"`
			ClientInfo      json.RawMessage               `json:"clientInfo,omitempty"`
			Capabilities    *initializeCapabilitiesParams `json:"capabilities,omitempty"`
		}
		workspaceAddParams struct {
			Cwd  string `json:"cwd"`
			Name string `json:"name,omitempty"`
		}
		workspaceRemoveParams struct {
			WorkspaceID string `json:"workspaceId"`
		}
		sessionListParams struct {
			WorkspaceID scope  `json:"workspaceId,omitempty"`
			Scope       string `json:"scope,omitempty"`
			Archived    bool   `json:"archived,omitempty"`
			Limit       int    `json:"limit,omitempty"`
			Cursor      string `json:"cursor,omitempty"`
		}
		sessionNewParams struct {
			WorkspaceID scope `json:"workspaceId"`
		}
		sessionGetParams struct {
			sessionParams
			MessagesFrom int `json:"messagesFrom,omitempty"`
		}
		sessionPromptParams struct {
			sessionParams
			RequestID string         `json:"requestId"`
			Text      string         `json:"text,omitempty"`
			Images    []native.Image `json:"images,omitempty"`
			Files     []fileParam    `json:"files,omitempty"`
			Skills    []string       `json:"skills,omitempty"`
			StreamID  string         `json:"streamId,omitempty"`
		}
		sessionQueueParams struct {
			sessionParams
			ID       string         `json:"id"`
			Action   string         `json:"action"`
			Text     string         `json:"text,omitempty"`
			Images   []native.Image `json:"images,omitempty"`
			Files    []fileParam    `json:"files,omitempty"`
			Skills   []string       `json:"skills,omitempty"`
			BeforeID *string        `json:"beforeId,omitempty"`
			HoldID   string         `json:"holdId,omitempty"`
		}
		sessionSetModelParams struct {
			sessionParams
			Provider string  `json:"provider"`
			ID       string  `json:"id"`
			Effort   *string `json:"effort,omitempty"`
		}
		sessionSetTitleParams struct {
			sessionParams
			Title string `json:"title"`
		}
		sessionSetPermissionParams struct {
			sessionParams
			Preset string `json:"preset"`
		}
		sessionSetBudgetParams struct {
			sessionParams
			SessionTokens limitParam[int]     `json:"sessionTokens,omitempty"`
			SessionCost   limitParam[float64] `json:"sessionCost,omitempty"`
			PromptTokens  limitParam[int]     `json:"promptTokens,omitempty"`
			PromptCost    limitParam[float64] `json:"promptCost,omitempty"`
		}
		sessionMarkReadParams struct {
			scopedParams
			MessageCount int `json:"messageCount"`
		}
		sessionSetPinnedParams struct {
			scopedParams
			Pinned bool `json:"pinned"`
		}
		sessionArchiveParams struct {
			scopedParams
			Archived bool `json:"archived,omitempty"`
		}
		sessionSearchParams struct {
			Query        string `json:"query"`
			WorkspaceID  scope  `json:"workspaceId,omitempty"`
			Scope        string `json:"scope,omitempty"`
			Limit        int    `json:"limit,omitempty"`
			Cursor       string `json:"cursor,omitempty"`
			IncludeTools bool   `json:"includeTools,omitempty"`
			Archived     bool   `json:"archived,omitempty"`
		}
		skillListParams struct {
			WorkspaceID scope `json:"workspaceId,omitempty"`
		}
		sessionExportParams struct {
			sessionParams
			Format string `json:"format"`
		}
		sessionImportParams struct {
			Path        string   `json:"path,omitempty"`
			Paths       []string `json:"paths,omitempty"`
			Cwd         string   `json:"cwd,omitempty"`
			WorkspaceID *string  `json:"workspaceId,omitempty"`
		}
		// The client's answer to session/request_approval (server.go).
		approvalAnswerParams struct {
			Decision string `json:"decision"`
		}
		// $/cancelRequest, either way: the server withdraws an approval
		// request with it, and ignores a client's.
		cancelRequestParams struct {
			ID any `json:"id"`
		}
	)
	of := func(v any) reflect.Type { return reflect.TypeOf(v) }
	method := func(name string, params, result any, or ...any) schema.Method {
		m := schema.Method{Name: name, Params: of(params), Result: of(result)}
		for _, o := range or {
			m.OrResults = append(m.OrResults, of(o))
		}
		return m
	}
	snapshot, none := native.Snapshot{}, struct{}{}
	methods := []schema.Method{
		method("initialize", initializeParams{}, native.InitializeResult{}),
		method("shutdown", none, none),
		method("workspace/add", workspaceAddParams{}, native.WorkspaceResult{}),
		method("workspace/list", none, native.WorkspacesResult{}),
		method("workspace/remove", workspaceRemoveParams{}, none),
		method("model/list", none, native.ModelsResult{}),
		method("config/reload", none, none),
		method("session/list", sessionListParams{}, native.SessionsResult{}),
		method("session/new", sessionNewParams{}, snapshot),
		method("session/get", sessionGetParams{}, snapshot),
		method("session/prompt", sessionPromptParams{}, native.PromptResult{}),
		method("session/abort", sessionParams{}, snapshot),
		method("session/flush", sessionParams{}, snapshot),
		method("session/resume", sessionParams{}, native.ResumeResult{}),
		method("session/queue", sessionQueueParams{}, snapshot, native.QueueItemResult{}),
		method("session/set_model", sessionSetModelParams{}, snapshot),
		method("session/set_title", sessionSetTitleParams{}, snapshot),
		method("session/generate_title", sessionParams{}, snapshot),
		method("session/set_permission", sessionSetPermissionParams{}, snapshot),
		method("session/set_budget", sessionSetBudgetParams{}, snapshot),
		method("session/mark_read", sessionMarkReadParams{}, native.MarkReadResult{}),
		method("session/set_pinned", sessionSetPinnedParams{}, native.PinnedResult{}),
		method("session/archive", sessionArchiveParams{}, none),
		method("session/delete", scopedParams{}, none),
		method("session/compact", sessionParams{}, snapshot),
		method("session/search", sessionSearchParams{}, native.SearchResult{}),
		method("skill/list", skillListParams{}, native.SkillsResult{}),
		method("session/export", sessionExportParams{}, native.ExportResult{}),
		method("session/import", sessionImportParams{}, native.ImportResult{}),
	}
	notification := func(name string, params any) schema.Notification {
		return schema.Notification{Name: name, Params: of(params)}
	}
	// The order of initialize's capabilities.notifications (results.go).
	notifications := []schema.Notification{
		notification("session/run_accepted", native.RunAccepted{}),
		notification("session/message", native.MessageUpdate{}),
		notification("session/tool", native.ToolUpdate{}),
		notification("session/queue_changed", native.QueueChanged{}),
		notification("session/prompt_timing", native.PromptTimingUpdate{}),
		notification("session/agent_settled", native.AgentSettled{}),
		notification("session/state", native.StateUpdate{}),
		notification("sessions/changed", native.SessionsChanged{}),
		notification("$/cancelRequest", cancelRequestParams{}),
	}

	errors := []schema.ErrorCode{
		{Code: wire.DataParseError, Integer: wire.ParseError},
		{Code: wire.DataInvalidRequest, Integer: wire.InvalidRequest},
		{Code: wire.DataMethodNotFound, Integer: wire.MethodNotFound},
	}
	for _, c := range rpcerr.Codes() {
		errors = append(errors, schema.ErrorCode{Code: string(c), Integer: rpcerr.Integer(c)})
	}

	var presets []string
	for _, p := range tools.Presets() {
		presets = append(presets, string(p))
	}
	decisions := []string{engine.DecisionAllowedOnce, engine.DecisionAllowedSession, engine.DecisionRejected, engine.DecisionRejectedSession}
	field := func(v any, member, name string, s *schema.Type) schema.Override {
		return schema.Override{Type: of(v), Field: member, Name: name, Schema: s}
	}
	role := schema.Enum(convo.RoleUser, convo.RoleAssistant, convo.RoleToolResult)
	overrides := []schema.Override{
		// Params that decode themselves (params.go, budget.go,
		// internal/dispatch's Text).
		{Type: of(scope{}), Schema: schema.Nullable(schema.String())},
		{Type: of(limitParam[int]{}), Schema: schema.Nullable(schema.Integer())},
		{Type: of(limitParam[float64]{}), Schema: schema.Nullable(schema.Number())},
		{Type: of(dispatch.Text("")), Schema: schema.String()},
		field(fileParam{}, "text", "", schema.String()),
		// A client says what it can do: members Loop does not know are
		// ignored (docs/protocol.md, initialize).
		{Type: of(initializeCapabilitiesParams{}), Open: true},
		field(initializeCapabilitiesParams{}, "stateMessages", "", schema.Nullable(schema.OneOf(schema.Boolean(), schema.Enum("delta")))),
		field(initializeParams{}, "protocolVersion", "", schema.Enum(ProtocolVersion)),
		field(sessionQueueParams{}, "beforeId", "", schema.Nullable(schema.String())),
		field(sessionSetModelParams{}, "effort", "", schema.Nullable(schema.String())),
		field(sessionListParams{}, "scope", "", schema.Enum("global")),
		field(sessionSearchParams{}, "scope", "", schema.Enum("all")),
		field(cancelRequestParams{}, "id", "", schema.OneOf(schema.String(), schema.Integer())),

		// Closed sets of strings, from the constants that name them.
		field(native.InitializeResult{}, "protocolVersion", "", schema.Enum(ProtocolVersion)),
		field(native.Message{}, "role", "Role", role),
		field(native.MessageUpdate{}, "role", "Role", role),
		field(native.SearchHit{}, "role", "Role", role),
		field(native.Block{}, "type", "BlockType", schema.Enum(convo.BlockText, convo.BlockThinking, convo.BlockImage, convo.BlockToolCall)),
		field(native.Message{}, "stopReason", "StopReason", schema.Enum(convo.StopEnd, convo.StopLength, convo.StopToolUse, convo.StopError, convo.StopAborted)),
		field(native.AgentSettled{}, "outcome", "Outcome", schema.Enum(engine.OutcomeCompleted, engine.OutcomeError, engine.OutcomeCancelled)),
		field(native.Snapshot{}, "operation", "Operation", schema.Enum(engine.OpIdle, engine.OpPrompt, engine.OpCompact, engine.OpModel, engine.OpFlush, engine.OpTitle, engine.OpPermission)),
		field(native.State{}, "permissionPreset", "PermissionPreset", schema.Enum(presets...)),
		field(sessionSetPermissionParams{}, "preset", "PermissionPreset", schema.Enum(presets...)),
		field(sessionQueueParams{}, "action", "QueueAction", schema.Enum(engine.QueueEdit, engine.QueueMove, engine.QueueDelete, engine.QueueSteer, engine.QueueBeginEdit, engine.QueueCancelEdit)),
		field(sessionExportParams{}, "format", "ExportFormat", schema.Enum(engine.ExportMarkdown, engine.ExportJSON)),
		field(native.ExportResult{}, "format", "ExportFormat", schema.Enum(engine.ExportMarkdown, engine.ExportJSON)),
		field(approvalAnswerParams{}, "decision", "Decision", schema.Enum(decisions...)),
		field(native.ApprovalRequest{}, "options", "", schema.ArrayOf(schema.Ref("Decision"))),
		// A withdrawn request's outcome is "cancelled" (engine/toolcall.go).
		field(native.ApprovalOutcome{}, "decision", "", schema.Enum(append(decisions, engine.OutcomeCancelled)...)),
		field(native.ErrorInfo{}, "code", "", schema.Ref(schema.ErrorCodeDef)),
	}
	return schema.Spec{
		Title:          "Loop native protocol " + ProtocolVersion,
		Methods:        methods,
		ServerRequests: []schema.Method{method("session/request_approval", native.ApprovalRequest{}, approvalAnswerParams{})},
		Notifications:  notifications,
		ClientNotifications: []schema.Notification{
			notification("exit", none),
			notification("initialized", none),
			notification("$/cancelRequest", cancelRequestParams{}),
		},
		Errors:    errors,
		Overrides: overrides,
	}
}
