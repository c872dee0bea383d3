package native

import (
	"reflect"
	"slices"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/rpcerr"
	"github.com/loopdev/loop/rpc/internal/wire"
)

// The native protocol as data: every method with the Go types its params
// decode into and its result encodes from, the server's own request, every
// notification and every error code. Package rpc serves exactly this table
// (methods.go binds a handler of these very types to each name, and
// refuses to start otherwise); a generator reads it to describe the
// protocol (docs/dispatch.md, "The method table").

// MethodSpec is one request: its name, the Go type of its params and the
// Go type of its result. For a result that takes several shapes
// (dispatch.Union), Result is the first and OrResults the others.
type MethodSpec struct {
	Name      string
	Params    reflect.Type
	Result    reflect.Type
	OrResults []reflect.Type
}

// NotificationSpec is one notification: its name and the Go type of its
// params.
type NotificationSpec struct {
	Name   string
	Params reflect.Type
}

// ErrorCode is one error's data.code and the JSON-RPC integer code that
// goes with it.
type ErrorCode struct {
	Code    string
	Integer int64
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func method[P, R any](name string, or ...reflect.Type) MethodSpec {
	return MethodSpec{Name: name, Params: typeOf[P](), Result: typeOf[R](), OrResults: or}
}

// Methods lists every method a client may call, in docs/protocol.md's
// order. session/queue's result is a QueueResult: the Snapshot, or for a
// begin-edit the QueueItemResult.
func Methods() []MethodSpec {
	return []MethodSpec{
		method[InitializeParams, InitializeResult]("initialize"),
		method[IgnoredParams, Empty]("shutdown"),
		method[WorkspaceAddParams, WorkspaceResult]("workspace/add"),
		method[NoParams, WorkspacesResult]("workspace/list"),
		method[WorkspaceRemoveParams, Empty]("workspace/remove"),
		method[NoParams, ModelsResult]("model/list"),
		method[NoParams, Empty]("config/reload"),
		method[SessionListParams, SessionsResult]("session/list"),
		method[SessionNewParams, Snapshot]("session/new"),
		method[SessionGetParams, Snapshot]("session/get"),
		method[SessionPromptParams, PromptResult]("session/prompt"),
		method[SessionParams, Snapshot]("session/abort"),
		method[SessionParams, Snapshot]("session/flush"),
		method[SessionParams, ResumeResult]("session/resume"),
		method[SessionQueueParams, Snapshot]("session/queue", typeOf[QueueItemResult]()),
		method[SessionSetModelParams, Snapshot]("session/set_model"),
		method[SessionSetTitleParams, Snapshot]("session/set_title"),
		method[SessionParams, Snapshot]("session/generate_title"),
		method[SessionSetPermissionParams, Snapshot]("session/set_permission"),
		method[SessionSetBudgetParams, Snapshot]("session/set_budget"),
		method[SessionMarkReadParams, MarkReadResult]("session/mark_read"),
		method[SessionSetPinnedParams, PinnedResult]("session/set_pinned"),
		method[SessionArchiveParams, Empty]("session/archive"),
		method[ScopedParams, Empty]("session/delete"),
		method[SessionParams, Snapshot]("session/compact"),
		method[SessionSearchParams, SearchResult]("session/search"),
		method[SkillListParams, SkillsResult]("skill/list"),
		method[SessionExportParams, ExportResult]("session/export"),
		method[SessionImportParams, ImportResult]("session/import"),
		method[SessionRestoreFilesParams, RestoreFilesResult]("session/restore_files"),
		method[SessionParams, ChangesResult]("session/changes"),
		method[SessionForkParams, Snapshot]("session/fork"),
		method[SessionRewindParams, RewindResult]("session/rewind"),
		method[SessionEditParams, EditResult]("session/edit"),
	}
}

// ServerRequests lists the requests the server sends; Result is what the
// client answers.
func ServerRequests() []MethodSpec {
	return []MethodSpec{method[ApprovalRequest, ApprovalAnswer]("session/request_approval")}
}

// eventNotifications are the notifications of the engine's events, in
// the order initialize's capabilities.notifications lists them.
var eventNotifications = []NotificationSpec{
	{"session/run_accepted", typeOf[RunAccepted]()},
	{"session/message", typeOf[MessageUpdate]()},
	{"session/tool", typeOf[ToolUpdate]()},
	{"session/queue_changed", typeOf[QueueChanged]()},
	{"session/prompt_timing", typeOf[PromptTimingUpdate]()},
	{"session/agent_settled", typeOf[AgentSettled]()},
	{"session/state", typeOf[StateUpdate]()},
	{"sessions/changed", typeOf[SessionsChanged]()},
	{"session/retry", typeOf[RetryUpdate]()},
}

// Notifications lists every notification the server sends: those of the
// engine's events, then $/cancelRequest, which withdraws an approval
// request.
func Notifications() []NotificationSpec {
	return append(slices.Clone(eventNotifications), NotificationSpec{"$/cancelRequest", typeOf[CancelRequest]()})
}

// EventNotifications are the names initialize's
// capabilities.notifications lists: the notifications of the engine's
// events.
func EventNotifications() []string {
	names := make([]string, len(eventNotifications))
	for i, n := range eventNotifications {
		names[i] = n.Name
	}
	return names
}

// ClientNotifications lists the notifications a client may send; the
// server reads no params of any.
func ClientNotifications() []NotificationSpec {
	return []NotificationSpec{
		{"exit", typeOf[NoParams]()},
		{"initialized", typeOf[NoParams]()},
		{"$/cancelRequest", typeOf[CancelRequest]()},
	}
}

// errorCodes are the engine's codes in docs/protocol.md's order; their
// integers are rpcerr's.
var errorCodes = []engine.Code{
	engine.CodeInvalidParams, engine.CodeInvalidImages, engine.CodeInvalidTextFiles, engine.CodeInvalidModelEffort,
	engine.CodeSessionNotFound, engine.CodeWorkspaceNotFound, engine.CodeQueueItemMissing, engine.CodeModelNotFound,
	engine.CodeBusy, engine.CodePendingSave, engine.CodeApprovalPending, engine.CodeRequestConflict,
	engine.CodeDeliveryUnknown, engine.CodeNothingToCompact, engine.CodeNotResumable, engine.CodeQueueConflict,
	engine.CodeFilesConflict, engine.CodeSessionLocked, engine.CodeNoProvider, engine.CodeConfigError, engine.CodeModelImagesUnsupported,
	engine.CodeContextBudget, engine.CodeBudgetExceeded, engine.CodeModelError, engine.CodeStorageError,
	engine.CodeCancelled, engine.CodeInternal,
}

// ErrorCodes lists every error's data.code with its JSON-RPC integer, in
// docs/protocol.md's order: the transport's, the dispatcher's, then the
// engine's.
func ErrorCodes() []ErrorCode {
	out := []ErrorCode{
		{wire.DataParseError, wire.ParseError},
		{wire.DataInvalidRequest, wire.InvalidRequest},
		{wire.DataMethodNotFound, wire.MethodNotFound},
	}
	for _, c := range errorCodes {
		out = append(out, ErrorCode{string(c), rpcerr.Integer(c)})
	}
	return out
}
