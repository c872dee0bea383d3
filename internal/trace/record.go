package trace

import (
	"encoding/json"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/blockjson"
)

// Version is the trace format's version, in every segment's header.
// Version 2 records a request body as a patch of the one before it
// (BodyPatch) and a stream's events as events records; version 3 adds the
// configuration that shapes requests (config records) and the end of each
// step (end records), so that a reader knows a step whose records were
// lost. This package reads versions 1 to 3.
const Version = 3

// Record types (the "type" member of every line; docs/traces.md).
const (
	TypeTrace      = "trace"      // first line of every segment
	TypePrompt     = "prompt"     // a run started from a user's input
	TypeResume     = "resume"     // a run started by session/resume
	TypeCompact    = "compact"    // a compaction the user asked for
	TypeTitle      = "title"      // a title the user asked for (session/generate_title)
	TypeCall       = "call"       // a model call starts
	TypeRequest    = "request"    // one HTTP attempt of a call is sent
	TypeResponse   = "response"   // its status line arrived
	TypeEvent      = "event"      // one server-sent event of its body (what a reader presents; version 1 wrote them)
	TypeEvents     = "events"     // server-sent events of its body, each a patch of the one before
	TypeError      = "error"      // the attempt failed (network, status, broken stream)
	TypeResult     = "result"     // the call ended
	TypeTool       = "tool"       // a tool call was executed
	TypeIncomplete = "incomplete" // records were lost before this line
	TypeConfig     = "config"     // the configuration that shapes requests, when it is first or newly in force (version 3)
	TypeEnd        = "end"        // a step (prompt, resume, compact, title) ended (version 3)
)

// Purposes of a model call.
const (
	PurposeMain    = "main"    // a turn of a run started by a prompt
	PurposeResume  = "resume"  // a turn of a run started by session/resume
	PurposeTitle   = "title"   // a title for the session
	PurposeSummary = "summary" // a compaction summary
)

// Record is one line of a trace. Which members are set depends on Type
// (docs/traces.md lists them per type).
type Record struct {
	Type string `json:"type"`
	T    int64  `json:"t"` // unix milliseconds when the line was made

	// trace
	Version     int    `json:"version,omitempty"`
	SessionID   string `json:"sessionId,omitempty"`
	WorkspaceID string `json:"workspaceId,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	Segment     int    `json:"segment,omitempty"`

	// prompt, resume, compact, call, tool
	RunID     string `json:"runId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	// prompt
	Input *Input `json:"input,omitempty"`

	// call and its attempts
	Call       int    `json:"call,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	Purpose    string `json:"purpose,omitempty"`
	Provider   string `json:"provider,omitempty"`
	API        string `json:"api,omitempty"`
	Model      string `json:"model,omitempty"`
	Effort     string `json:"effort,omitempty"`
	Permission string `json:"permission,omitempty"`
	// Logical is the request as the engine made it, for providers that
	// send no HTTP body (scripted, demo).
	Logical json.RawMessage `json:"logical,omitempty"`
	// LogicalOf, when set, is encoded by the writer as Logical: a long
	// one (a prompt of 50 MB) a piece at a time as it is written, never
	// whole in memory (longline.go). It must not change afterwards.
	LogicalOf any `json:"-"`

	// request
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// BodyText holds a body that is not a JSON object.
	BodyText string `json:"bodyText,omitempty"`
	// BodyPatch tells the body as a change of an earlier request's
	// (Bodies rebuilds it).
	BodyPatch *BodyPatch `json:"bodyPatch,omitempty"`

	// response
	Status int `json:"status,omitempty"`
	// event: the event's exact bytes, blank line included
	Raw string `json:"raw,omitempty"`
	// events (read as the event records they hold)
	Events []EventPatch `json:"events,omitempty"`

	// error, result
	Error     string `json:"error,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`

	// result
	DurationMs int64   `json:"durationMs,omitempty"`
	Attempts   int     `json:"attempts,omitempty"`
	StopReason string  `json:"stopReason,omitempty"`
	Usage      *Usage  `json:"usage,omitempty"`
	Content    []Block `json:"content,omitempty"` // the reply, for providers without HTTP only

	// tool
	ToolCallID  string          `json:"toolCallId,omitempty"`
	Name        string          `json:"name,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	ResultBytes int             `json:"resultBytes,omitempty"`
	IsError     bool            `json:"isError,omitempty"`
	Outcome     string          `json:"outcome,omitempty"` // ok, error, cancelled; an end's: its run's outcome
	Result      []Block         `json:"result,omitempty"`

	// end: the type of the step record it ends (runId names a run's)
	Step string `json:"step,omitempty"`
	// config: config.json's members that shape requests, as in force
	Config json.RawMessage `json:"config,omitempty"`

	// incomplete
	Reason string `json:"reason,omitempty"`
}

// Input is a prompt's input as the user submitted it.
type Input struct {
	Text   string            `json:"text"`
	Images []json.RawMessage `json:"images,omitempty"`
	Files  []json.RawMessage `json:"files,omitempty"`
	Skills []string          `json:"skills,omitempty"`
}

// Usage is a call's token usage as the provider reported it; its fields
// are convo.Usage's, so the two convert directly.
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

// UsageOf converts convo's usage (nil stays nil).
func UsageOf(u *convo.Usage) *Usage {
	if u == nil {
		return nil
	}
	c := Usage(*u)
	return &c
}

// Block is one content block with its JSON names; the scripted model's
// request log writes the same form (internal/blockjson). It converts
// directly to and from convo.Block.
type Block = blockjson.Block

// BlocksOf converts convo blocks; nil becomes empty (a logical request's
// content is [], never null).
func BlocksOf(bs []convo.Block) []Block {
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block(b)
	}
	return out
}

// StoreBlocks converts back.
func StoreBlocks(bs []Block) []convo.Block {
	out := make([]convo.Block, len(bs))
	for i, b := range bs {
		out[i] = convo.Block(b)
	}
	return out
}
