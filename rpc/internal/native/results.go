package native

import "encoding/json"

// Results of docs/protocol.md section 5 that are not a Snapshot, and the
// server's own request of section 6. Members are declared in the order the
// server writes them, which for the envelopes ({"models": ...,
// "configError": ...}) is alphabetical.

// InitializeResult answers initialize.
type InitializeResult struct {
	Capabilities    Capabilities `json:"capabilities"`
	ProtocolVersion string       `json:"protocolVersion"`
	ServerInfo      ServerInfo   `json:"serverInfo"`
	StreamID        string       `json:"streamId"`
}

// Capabilities are what initialize says the server offers.
type Capabilities struct {
	Approvals     bool     `json:"approvals"`
	DeltaMerging  bool     `json:"deltaMerging"`
	Files         bool     `json:"files"`
	Framing       string   `json:"framing"`
	Images        bool     `json:"images"`
	Independent   bool     `json:"independent"`
	Notifications []string `json:"notifications"`
	Queue         bool     `json:"queue"`
	Sandbox       Sandbox  `json:"sandbox"`
}

// Sandbox says whether bash commands and MCP stdio servers run in an OS
// sandbox here (docs/configuration.md, "The sandbox").
type Sandbox struct {
	Available bool   `json:"available"`
	Mechanism string `json:"mechanism,omitempty"`
	ABI       int    `json:"abi,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ServerInfo names the server.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// WorkspaceResult answers workspace/add.
type WorkspaceResult struct {
	Workspace Workspace `json:"workspace"`
}

// WorkspacesResult answers workspace/list.
type WorkspacesResult struct {
	Workspaces []Workspace `json:"workspaces"`
}

// ModelsResult answers model/list.
type ModelsResult struct {
	ConfigError string  `json:"configError,omitempty"`
	Models      []Model `json:"models"`
}

// SessionsResult answers session/list.
type SessionsResult struct {
	NextCursor string    `json:"nextCursor,omitempty"`
	Sessions   []Summary `json:"sessions"`
}

// PromptResult answers session/prompt.
type PromptResult struct {
	RunID     string `json:"runId"`
	RequestID string `json:"requestId"`
	Queued    bool   `json:"queued"`
}

// RewindResult answers session/rewind: the rewound session's snapshot
// and the fork that keeps what it dropped.
type RewindResult struct {
	*Snapshot
	ForkedID string `json:"forkedId"`
}

// EditResult answers session/edit: as PromptResult, and the fork that
// keeps what the edit's rewind dropped.
type EditResult struct {
	PromptResult
	ForkedID string `json:"forkedId"`
}

// ResumeResult answers session/resume.
type ResumeResult struct {
	RunID string `json:"runId"`
}

// QueueItemResult answers a session/queue begin-edit.
type QueueItemResult struct {
	Item *QueueItem `json:"item"`
}

// MarkReadResult answers session/mark_read.
type MarkReadResult struct {
	Read bool `json:"read"`
}

// PinnedResult answers session/set_pinned.
type PinnedResult struct {
	PinnedAt *string `json:"pinnedAt"`
}

// SkillsResult answers skill/list.
type SkillsResult struct {
	Skills []Skill `json:"skills"`
}

// ApprovalRequest is the params of session/request_approval.
type ApprovalRequest struct {
	SessionID  string       `json:"sessionId"`
	ApprovalID string       `json:"approvalId"`
	ToolCallID string       `json:"toolCallId"`
	Tool       ApprovalTool `json:"tool"`
	Options    []string     `json:"options"`
	Reason     string       `json:"reason,omitempty"`
}

// ApprovalTool names the tool call an approval request is about.
type ApprovalTool struct {
	Name   string          `json:"name"`
	Server string          `json:"server,omitempty"`
	Input  json.RawMessage `json:"input"`
}

// SearchResult answers session/search.
type SearchResult struct {
	Hits       []SearchHit `json:"hits"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// SearchHit is one matching message of session/search.
type SearchHit struct {
	SessionID    string        `json:"sessionId"`
	WorkspaceID  *string       `json:"workspaceId"`
	Title        string        `json:"title"`
	MessageIndex int           `json:"messageIndex"`
	Role         string        `json:"role"`
	Snippet      string        `json:"snippet"`
	Ranges       []SearchRange `json:"ranges"`
	UpdatedAt    int64         `json:"updatedAt"`
}

// SearchRange is a match in a snippet: [start, end) in UTF-16 code units.
type SearchRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// ExportResult answers session/export.
type ExportResult struct {
	Format  string `json:"format"`
	Content string `json:"content"`
}

// ImportResult answers session/import: each file named is in exactly one
// of the three lists.
type ImportResult struct {
	Sessions []ImportedSession `json:"sessions"`
	Skipped  []ImportProblem   `json:"skipped"`
	Failed   []ImportProblem   `json:"failed"`
}

// ImportedSession is one file session/import made a session of (or found
// already imported: Existed).
type ImportedSession struct {
	File         string  `json:"file"`
	Format       string  `json:"format"`
	SessionID    string  `json:"sessionId"`
	WorkspaceID  *string `json:"workspaceId"` // null: an independent chat
	Cwd          string  `json:"cwd"`
	MessageCount int     `json:"messageCount"`
	Existed      bool    `json:"existed"`
}

// ImportProblem is a file session/import skipped or failed, and why.
type ImportProblem struct {
	File  string    `json:"file"`
	Error ErrorInfo `json:"error"`
}

// Empty is the result of a method that answers nothing but success: {}.
type Empty struct{}

// QueueResult answers session/queue: a begin-edit with the held item
// (Item), every other action with the session's snapshot (Snapshot). It
// is written as the one that is set.
type QueueResult struct {
	Item     *QueueItemResult `json:"-"`
	Snapshot *Snapshot        `json:"-"`
}

// Variant is the shape that is set, what the server writes.
func (r *QueueResult) Variant() any {
	if r.Item != nil {
		return r.Item
	}
	return r.Snapshot
}

// MarshalJSON writes the shape that is set.
func (r *QueueResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.Variant()) }

// RestoreFilesResult answers session/restore_files.
type RestoreFilesResult struct {
	Restored  []string `json:"restored"`
	Conflicts []string `json:"conflicts"`
}

// ChangesResult answers session/changes.
type ChangesResult struct {
	Runs []RunChanges `json:"runs"`
}

// RunChanges is one run's files in session/changes.
type RunChanges struct {
	RunID             string        `json:"runId"`
	MessageStartIndex int           `json:"messageStartIndex"`
	MessageEndIndex   int           `json:"messageEndIndex"`
	Files             []ChangedFile `json:"files"`
	BashNotCovered    bool          `json:"bashNotCovered,omitempty"`
}

// ChangedFile is one file a run changed.
type ChangedFile struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}
