package rpc

import (
	"reflect"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/rpc/internal/schema"
)

// protocolSpec is the native dialect as package schema describes it
// (`loop protocol schema`, `loop protocol ts`). Its methods, the server's
// request, its notifications and its error codes are package native's
// table (native.Methods and the rest), the very types the server is
// served with (methods.go refuses to start otherwise), so the schema is
// the protocol served. What this file adds is what the Go types cannot
// say themselves: closed sets of strings, named by the constants the
// engine uses, and the JSON shape of the params that keep a member raw
// to check it themselves (native.Scope, Flag, Count, Limit). A member
// tagged omitempty is one a client may leave out, as docs/protocol.md's
// param tables say (protocoldoc_test.go checks both). It is built only
// when asked for, never at start-up.
func protocolSpec() schema.Spec {
	methods := func(specs []native.MethodSpec) []schema.Method {
		out := make([]schema.Method, len(specs))
		for i, m := range specs {
			out[i] = schema.Method{Name: m.Name, Params: m.Params, Result: m.Result, OrResults: m.OrResults}
		}
		return out
	}
	notifications := func(specs []native.NotificationSpec) []schema.Notification {
		out := make([]schema.Notification, len(specs))
		for i, n := range specs {
			out[i] = schema.Notification{Name: n.Name, Params: n.Params}
		}
		return out
	}
	var errors []schema.ErrorCode
	for _, c := range native.ErrorCodes() {
		errors = append(errors, schema.ErrorCode{Code: c.Code, Integer: c.Integer})
	}
	return schema.Spec{
		Title:               "Loop native protocol " + ProtocolVersion,
		Methods:             methods(native.Methods()),
		ServerRequests:      methods(native.ServerRequests()),
		Notifications:       notifications(native.Notifications()),
		ClientNotifications: notifications(native.ClientNotifications()),
		Errors:              errors,
		Overrides:           protocolOverrides(),
	}
}

// protocolOverrides say what native's types are on the wire where their
// Go shape does not.
func protocolOverrides() []schema.Override {
	of := func(v any) reflect.Type { return reflect.TypeOf(v) }
	field := func(v any, member, name string, s *schema.Type) schema.Override {
		return schema.Override{Type: of(v), Field: member, Name: name, Schema: s}
	}
	var presets []string
	for _, p := range tools.Presets() {
		presets = append(presets, string(p))
	}
	decisions := []string{engine.DecisionAllowedOnce, engine.DecisionAllowedSession, engine.DecisionRejected, engine.DecisionRejectedSession}
	role := schema.Enum(convo.RoleUser, convo.RoleAssistant, convo.RoleToolResult)
	exportFormat := schema.Enum(engine.ExportMarkdown, engine.ExportJSON)
	empty := &schema.Type{Kind: schema.KindObject}
	return []schema.Override{
		// Params kept as sent and checked by the handler (params.go), or
		// decoded by a reader of their own (internal/dispatch's Text).
		{Type: of(native.Scope{}), Schema: schema.Nullable(schema.String())},
		{Type: of(native.Flag{}), Schema: schema.Boolean()},
		{Type: of(native.Count{}), Schema: schema.Integer()},
		{Type: of(native.Limit[int]{}), Schema: schema.Nullable(schema.Integer())},
		{Type: of(native.Limit[float64]{}), Schema: schema.Nullable(schema.Number())},
		{Type: of(dispatch.Text("")), Schema: schema.String()},
		// Members that are pointers only so that a missing one is told
		// from an empty one: null is refused like absence.
		field(native.FileParam{}, "text", "", schema.String()),
		field(native.SessionSetTitleParams{}, "title", "", schema.String()),
		field(native.SessionSearchParams{}, "query", "", schema.String()),
		// No params, or params never read: an empty object, as for a
		// result of {} (native.Empty).
		{Type: of(native.NoParams{}), Schema: empty},
		{Type: of(native.IgnoredParams{}), Schema: empty},
		{Type: of(native.Empty{}), Schema: empty},
		// initialize keeps protocolVersion and capabilities raw so that a
		// wrong version is reported first (native.InitializeParams); the
		// capabilities are then decoded into native.ClientCapabilities,
		// whose members Loop does not know are ignored.
		field(native.InitializeParams{}, "protocolVersion", "", schema.Enum(ProtocolVersion)),
		{Type: of(native.InitializeParams{}), Field: "capabilities", As: of(native.ClientCapabilities{})},
		{Type: of(native.ClientCapabilities{}), Open: true},
		field(native.ClientCapabilities{}, "stateMessages", "", schema.Nullable(schema.OneOf(schema.Boolean(), schema.Enum("delta")))),
		field(native.SessionQueueParams{}, "beforeId", "", schema.Nullable(schema.String())),
		field(native.SessionSetModelParams{}, "effort", "", schema.Nullable(schema.String())),
		field(native.SessionListParams{}, "scope", "", schema.Enum("global")),
		field(native.SessionSearchParams{}, "scope", "", schema.Enum("all")),
		field(native.CancelRequest{}, "id", "", schema.OneOf(schema.String(), schema.Integer())),

		// Closed sets of strings, from the constants that name them.
		field(native.InitializeResult{}, "protocolVersion", "", schema.Enum(ProtocolVersion)),
		field(native.Message{}, "role", "Role", role),
		field(native.MessageUpdate{}, "role", "Role", role),
		field(native.SearchHit{}, "role", "Role", role),
		field(native.Block{}, "type", "BlockType", schema.Enum(convo.BlockText, convo.BlockThinking, convo.BlockImage, convo.BlockToolCall)),
		field(native.Message{}, "stopReason", "StopReason", schema.Enum(convo.StopEnd, convo.StopLength, convo.StopToolUse, convo.StopError, convo.StopAborted)),
		field(native.AgentSettled{}, "outcome", "Outcome", schema.Enum(engine.OutcomeCompleted, engine.OutcomeError, engine.OutcomeCancelled, engine.OutcomeInterrupted)),
		field(native.Snapshot{}, "operation", "Operation", schema.Enum(engine.Operations()...)),
		field(native.State{}, "permissionPreset", "PermissionPreset", schema.Enum(presets...)),
		field(native.SessionSetPermissionParams{}, "preset", "PermissionPreset", schema.Enum(presets...)),
		field(native.SessionQueueParams{}, "action", "QueueAction", schema.Enum(engine.QueueEdit, engine.QueueMove, engine.QueueDelete, engine.QueueSteer, engine.QueueBeginEdit, engine.QueueCancelEdit)),
		field(native.SessionExportParams{}, "format", "ExportFormat", exportFormat),
		field(native.ExportResult{}, "format", "ExportFormat", exportFormat),
		field(native.ApprovalAnswer{}, "decision", "Decision", schema.Enum(decisions...)),
		field(native.ApprovalRequest{}, "options", "", schema.ArrayOf(schema.Ref("Decision"))),
		// A withdrawn request's outcome is "cancelled" (engine/toolcall.go).
		field(native.ApprovalOutcome{}, "decision", "", schema.Enum(append(decisions, engine.OutcomeCancelled)...)),
		field(native.ErrorInfo{}, "code", "", schema.Ref(schema.ErrorCodeDef)),
	}
}
