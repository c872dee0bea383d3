package native

import "encoding/json"

// The data types of docs/protocol.md section 4, in its order. Members are
// declared in the order they are written.

// Workspace is section 4.1.
type Workspace struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Cwd  string `json:"cwd"`
}

// ModelRef names a model (section 4.2).
type ModelRef struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
}

// Model is a configured model (section 4.2): model/list and
// snapshot.modelInfo.
type Model struct {
	Provider        string   `json:"provider"`
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	ContextWindow   int      `json:"contextWindow"`
	MaxOutputTokens int      `json:"maxOutputTokens"`
	Images          bool     `json:"images"`
	Efforts         []string `json:"efforts"`
	API             string   `json:"api"`
	Cost            *Prices  `json:"cost,omitempty"`
}

// Prices are a model's prices per million tokens (config.json
// models[].cost).
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Skill is section 4.3.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
}

// Message is one history message (section 4.4).
type Message struct {
	Role      string  `json:"role"`
	Content   []Block `json:"content"`
	Timestamp int64   `json:"timestamp"`

	RequestID string   `json:"requestId,omitempty"`
	Skills    []string `json:"skills,omitempty"`

	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	Usage        *Usage `json:"usage,omitempty"`
	StopReason   string `json:"stopReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`

	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

// Block is one piece of a message's content (section 4.4).
type Block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	Signature  string          `json:"signature,omitempty"`
	Attachment string          `json:"attachment,omitempty"`
	Data       string          `json:"data,omitempty"`
	MimeType   string          `json:"mimeType,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// Usage is a reply's token accounting (section 4.4).
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead,omitempty"`
	CacheWrite  int `json:"cacheWrite,omitempty"`
	TotalTokens int `json:"totalTokens"`
}

// Image is a prompt's image attachment (section 4.5); prompts and queue
// edits decode it too.
type Image struct {
	Type     string `json:"type,omitempty"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// File is a prompt's text file attachment (section 4.5). Prompts decode
// it with a required text (FileParam).
type File struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// QueueItem is section 4.6.
type QueueItem struct {
	ID       string   `json:"id"`
	RunID    string   `json:"runId"`
	Text     string   `json:"text"`
	Images   []Image  `json:"images"`
	Files    []File   `json:"files"`
	Skills   []string `json:"skills"`
	Held     bool     `json:"held"`
	HoldID   string   `json:"holdId,omitempty"`
	Steer    bool     `json:"steer"`
	QueuedAt int64    `json:"queuedAt"`
}

// PromptTiming is section 4.7.
type PromptTiming struct {
	ID                string       `json:"id,omitempty"`
	UserMessageIndex  int          `json:"userMessageIndex"`
	MessageStartIndex *int         `json:"messageStartIndex,omitempty"`
	MessageEndIndex   *int         `json:"messageEndIndex,omitempty"`
	StartedAt         int64        `json:"startedAt"`
	FinishedAt        *int64       `json:"finishedAt,omitempty"`
	Stopped           bool         `json:"stopped,omitempty"`
	Usage             *UsageTotals `json:"usage,omitempty"`
	// Interrupted: the run's process died before its commit, and the
	// next open committed what its journal held (docs/protocol.md,
	// "Crash recovery").
	Interrupted bool `json:"interrupted,omitempty"`
}

// UsageTotals totals model calls (docs/protocol.md, "Usage"): a prompt
// timing's calls, or with Title and Compaction a session's. Cost is there
// only when every call counted was priced.
type UsageTotals struct {
	Input       int          `json:"input"`
	Output      int          `json:"output"`
	CacheRead   int          `json:"cacheRead"`
	CacheWrite  int          `json:"cacheWrite"`
	TotalTokens int          `json:"totalTokens"`
	Calls       int          `json:"calls"`
	Cost        *float64     `json:"cost,omitempty"`
	Title       *UsageTotals `json:"title,omitempty"`
	Compaction  *UsageTotals `json:"compaction,omitempty"`
}

// Budget is a session's limits (session/set_budget); unset ones are null.
type Budget struct {
	SessionTokens *int     `json:"sessionTokens"`
	SessionCost   *float64 `json:"sessionCost"`
	PromptTokens  *int     `json:"promptTokens"`
	PromptCost    *float64 `json:"promptCost"`
}

// CompactionMeta is section 4.8.
type CompactionMeta struct {
	ID           string `json:"id"`
	MessageCount int    `json:"messageCount"`
	TokensBefore int    `json:"tokensBefore"`
	CreatedAt    int64  `json:"createdAt"`
}

// ToolStatus is one tool call of the active run (section 4.9).
type ToolStatus struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
	Status     string `json:"status"`
}

// ApprovalOutcome is the latest approval decision (section 4.9).
type ApprovalOutcome struct {
	ApprovalID string `json:"approvalId"`
	Tool       string `json:"tool"`
	Server     string `json:"server,omitempty"`
	Decision   string `json:"decision"`
	At         int64  `json:"at"`
}

// ErrorInfo is a failure as clients show it (section 4.9).
type ErrorInfo struct {
	Code    string      `json:"code"`
	Message string      `json:"message"`
	Errors  []ErrorInfo `json:"errors,omitempty"`
}

// McpServerStatus is one MCP server of the session's working directory
// (section 4.9).
type McpServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Error     string `json:"error,omitempty"`
	LastError string `json:"lastError,omitempty"`
	Restarts  int    `json:"restarts"`
	Tools     int    `json:"tools"`
	Disabled  bool   `json:"disabled,omitempty"`
}

// Snapshot is a session's complete state (section 4.10).
type Snapshot struct {
	SessionID    string            `json:"sessionId"`
	WorkspaceID  *string           `json:"workspaceId"`
	Cwd          string            `json:"cwd"`
	Model        *ModelRef         `json:"model"`
	ModelInfo    *Model            `json:"modelInfo,omitempty"`
	Efforts      []string          `json:"efforts"`
	Effort       string            `json:"effort"`
	State        State             `json:"state"`
	Operation    string            `json:"operation"`
	RunID        string            `json:"runId,omitempty"`
	RequestID    string            `json:"requestId,omitempty"`
	Tools        []ToolStatus      `json:"tools"`
	LastApproval *ApprovalOutcome  `json:"lastApproval"`
	Draft        bool              `json:"draft"`
	MCPServers   []McpServerStatus `json:"mcpServers"`
	Parent       *Parent           `json:"parent"`
}

// Parent is a fork's parent session and how many of its messages the fork
// starts with.
type Parent struct {
	SessionID    string `json:"sessionId"`
	MessageCount int    `json:"messageCount"`
}

// State is a snapshot's conversation state (section 4.10).
type State struct {
	Messages             []Message       `json:"messages"`
	MessagesFrom         int             `json:"messagesFrom"`
	MessageCount         int             `json:"messageCount"`
	UserMessageCount     int             `json:"userMessageCount"`
	Streaming            *Message        `json:"streaming"`
	Unread               bool            `json:"unread"`
	Queue                []QueueItem     `json:"queue"`
	CanResume            bool            `json:"canResume"`
	HasPendingSave       bool            `json:"hasPendingSave"`
	PromptTimings        []PromptTiming  `json:"promptTimings"`
	PromptTimingsFrom    int             `json:"promptTimingsFrom"`
	Compaction           *CompactionMeta `json:"compaction"`
	CompactionStartedAt  *int64          `json:"compactionStartedAt"`
	PermissionPreset     string          `json:"permissionPreset"`
	Title                string          `json:"title"`
	TitleSource          string          `json:"titleSource"`
	TitleError           *string         `json:"titleError"`
	PinnedAt             *string         `json:"pinnedAt"`
	Archived             bool            `json:"archived"`
	AcceptedRequestIDs   []string        `json:"acceptedRequestIds"`
	LastError            *ErrorInfo      `json:"lastError"`
	IsWaitingForApproval bool            `json:"isWaitingForApproval"`
	Usage                UsageTotals     `json:"usage"`
	Budget               Budget          `json:"budget"`
	// RecoveryFile is the path of a recovery file waiting for this
	// session, or null (docs/protocol.md, "Crash recovery").
	RecoveryFile *string `json:"recoveryFile"`
	// Recovered is the run recovered from a crashed process's journal,
	// until the next run; null when none (docs/protocol.md, "Crash
	// recovery").
	Recovered *Recovered `json:"recovered"`
}

// Recovered is state.recovered: the run the last open recovered and how
// many messages it kept.
type Recovered struct {
	RunID         string `json:"runId"`
	Messages      int    `json:"messages"`
	InterruptedAt int64  `json:"interruptedAt"`
}

// Summary is one list entry (section 4.11).
type Summary struct {
	ID                   string      `json:"id"`
	WorkspaceID          *string     `json:"workspaceId"`
	Title                string      `json:"title"`
	TitleSource          string      `json:"titleSource"`
	CreatedAt            int64       `json:"createdAt"`
	UpdatedAt            int64       `json:"updatedAt"`
	MessageCount         int         `json:"messageCount"`
	UserMessageCount     int         `json:"userMessageCount"`
	IsGenerating         bool        `json:"isGenerating"`
	IsWaitingForApproval bool        `json:"isWaitingForApproval"`
	Unread               bool        `json:"unread"`
	PinnedAt             *string     `json:"pinnedAt"`
	Archived             bool        `json:"archived"`
	Model                *ModelRef   `json:"model"`
	Usage                UsageTotals `json:"usage"`
	Parent               *Parent     `json:"parent"`
}
