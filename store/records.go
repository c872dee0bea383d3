package store

import (
	"encoding/json"

	"github.com/loopdev/loop/convo"
)

// The disk records: the only structs with the JSON member names of the
// session format (docs/storage.md). The exported types (Message, Header,
// ...) carry no tags, so renaming a Go field never changes what is on disk;
// these records map each field to its member. A leaf record has exactly the
// fields of its domain type, so the two convert into each other (Go ignores
// tags in a conversion) and a field added to one and not the other does
// not compile. The golden files in testdata/golden pin the bytes.

// messageRecord is one line of messages.jsonl.
type messageRecord struct {
	Role      string        `json:"role"`
	Content   []blockRecord `json:"content"`
	Timestamp int64         `json:"timestamp"`

	RequestID string   `json:"requestId,omitempty"`
	Skills    []string `json:"skills,omitempty"`

	Provider     string       `json:"provider,omitempty"`
	Model        string       `json:"model,omitempty"`
	Usage        *usageRecord `json:"usage,omitempty"`
	StopReason   string       `json:"stopReason,omitempty"`
	ErrorMessage string       `json:"errorMessage,omitempty"`

	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

type blockRecord struct {
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

type usageRecord struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead,omitempty"`
	CacheWrite  int `json:"cacheWrite,omitempty"`
	TotalTokens int `json:"totalTokens"`
}

func messageRecordOf(m *convo.Message) messageRecord {
	r := messageRecord{
		Role: m.Role, Timestamp: m.Timestamp, RequestID: m.RequestID, Skills: m.Skills,
		Provider: m.Provider, Model: m.Model, Usage: (*usageRecord)(m.Usage), StopReason: m.StopReason,
		ErrorMessage: m.ErrorMessage, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError,
	}
	// nil stays nil: "content": null and [] are both in the format.
	if m.Content != nil {
		r.Content = make([]blockRecord, len(m.Content))
		for i := range m.Content {
			r.Content[i] = blockRecord(m.Content[i])
		}
	}
	return r
}

func (r *messageRecord) message() convo.Message {
	m := convo.Message{
		Role: r.Role, Timestamp: r.Timestamp, RequestID: r.RequestID, Skills: r.Skills,
		Provider: r.Provider, Model: r.Model, Usage: (*convo.Usage)(r.Usage), StopReason: r.StopReason,
		ErrorMessage: r.ErrorMessage, ToolCallID: r.ToolCallID, ToolName: r.ToolName, IsError: r.IsError,
	}
	if r.Content != nil {
		m.Content = make([]convo.Block, len(r.Content))
		for i := range r.Content {
			m.Content[i] = convo.Block(r.Content[i])
		}
	}
	return m
}

// headerRecord is header.json. PromptTimings is only in headers written
// before timings.jsonl (and in recovery files); it comes last, as Loop
// wrote it (List's shortcut relies on it for those headers).
type headerRecord struct {
	Format      string  `json:"format"`
	Version     int     `json:"version"`
	ID          string  `json:"id"`
	WorkspaceID *string `json:"workspaceId"`
	Cwd         string  `json:"cwd"`
	CreatedAt   int64   `json:"createdAt"`
	UpdatedAt   int64   `json:"updatedAt"`

	Title       string          `json:"title,omitempty"`
	TitleSource string          `json:"titleSource,omitempty"`
	PinnedAt    *string         `json:"pinnedAt,omitempty"`
	Unread      bool            `json:"unread"`
	ArchivedAt  *string         `json:"archivedAt,omitempty"`
	Model       *modelRefRecord `json:"model,omitempty"`
	Effort      string          `json:"effort,omitempty"`
	Permission  string          `json:"permission,omitempty"`
	// The usage ledger's totals and the budgets (store/usage.go): fixed
	// in size, so the header stays small however long the session.
	Usage  *sessionUsageRecord `json:"usage,omitempty"`
	Budget *budgetRecord       `json:"budget,omitempty"`

	MessageCount     int    `json:"messageCount"`
	UserMessageCount int    `json:"userMessageCount"`
	MessagesBytes    int64  `json:"messagesBytes"`
	MessagesCRC      uint32 `json:"messagesCrc32c"`
	RuntimeCount     int    `json:"runtimeCount"`
	RuntimeBytes     int64  `json:"runtimeBytes"`
	RuntimeCRC       uint32 `json:"runtimeCrc32c"`
	TimingsCount     int    `json:"timingsCount"`
	TimingsBytes     int64  `json:"timingsBytes"`
	TimingsCRC       uint32 `json:"timingsCrc32c"`

	// Recovered is the run the last open recovered from the journal of a
	// crashed process (store/recover.go), until the next run's commit.
	Recovered *recoveredRecord `json:"recovered,omitempty"`
	// PendingRun is the run whose first prompt wrote a draft to disk,
	// until its commit (Header.PendingRun).
	PendingRun string `json:"pendingRun,omitempty"`

	Compaction *compactionRecord `json:"compaction,omitempty"`
	Migration  *migrationRecord  `json:"migration,omitempty"`
	// Parent and PendingFork are version 2's (Header.Parent,
	// Header.PendingFork).
	Parent        *parentRecord  `json:"parent,omitempty"`
	PendingFork   string         `json:"pendingFork,omitempty"`
	PromptTimings []timingRecord `json:"promptTimings,omitempty"`
}

// parentRecord is a fork's parent member (ParentRef).
type parentRecord struct {
	SessionID        string `json:"sessionId"`
	MessageCount     int    `json:"messageCount"`
	UserMessageCount int    `json:"userMessageCount"`
	MessagesCRC      uint32 `json:"messagesCrc32c"`
	Timings          int    `json:"timings"`
}

type modelRefRecord struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
}

// timingRecord is a prompt timing. PromptTiming holds Opts, not pointers,
// so the two convert through recordOfTiming and timingOfRecord.
type timingRecord struct {
	ID                string `json:"id,omitempty"`
	UserMessageIndex  int    `json:"userMessageIndex"`
	MessageStartIndex *int   `json:"messageStartIndex,omitempty"`
	MessageEndIndex   *int   `json:"messageEndIndex,omitempty"`
	StartedAt         int64  `json:"startedAt"`
	FinishedAt        *int64 `json:"finishedAt,omitempty"`
	Stopped           bool   `json:"stopped,omitempty"`
	// Usage totals the model calls the prompt's run made.
	Usage *usageSumRecord `json:"usage,omitempty"`
	// Interrupted: the run was cut by a crash and recovered from its
	// journal (store/recover.go).
	Interrupted bool `json:"interrupted,omitempty"`
}

// timingLine is one line of timings.jsonl: a prompt timing and its index
// in the session's list of timings.
type timingLine struct {
	Index int `json:"index"`
	timingRecord
}

// recoveredRecord is the header's recovered member (RecoveredRun).
type recoveredRecord struct {
	RunID         string `json:"runId"`
	Messages      int    `json:"messages"`
	InterruptedAt int64  `json:"interruptedAt"`
}

type compactionRecord struct {
	ID           string `json:"id"`
	MessageCount int    `json:"messageCount"`
	TokensBefore int    `json:"tokensBefore"`
	CreatedAt    int64  `json:"createdAt"`
}

// checkpointRecord is the data of a compaction record in runtime.jsonl
// (Checkpoint).
type checkpointRecord struct {
	ID           string `json:"id"`
	Summary      string `json:"summary"`
	MessageCount int    `json:"messageCount"`
	TokensBefore int    `json:"tokensBefore"`
	CreatedAt    int64  `json:"createdAt"`
}

type migrationRecord struct {
	From          string          `json:"from"`
	SourcePath    string          `json:"sourcePath"`
	SourceID      string          `json:"sourceId,omitempty"`
	SourceVersion int             `json:"sourceVersion,omitempty"`
	SourceApp     string          `json:"sourceApp,omitempty"`
	SourceSHA256  string          `json:"sourceSha256"`
	MigratedAt    int64           `json:"migratedAt"`
	Notes         []string        `json:"notes,omitempty"`
	Previous      json.RawMessage `json:"previous,omitempty"`
}

// headerRecordOf is h's record, without prompt timings.
func headerRecordOf(h *Header) headerRecord {
	return headerRecord{
		Format: h.Format, Version: h.Version, ID: h.ID, WorkspaceID: h.WorkspaceID, Cwd: h.Cwd,
		CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt,
		Title: h.Title, TitleSource: h.TitleSource, PinnedAt: h.PinnedAt, Unread: h.Unread, ArchivedAt: h.ArchivedAt,
		Model: (*modelRefRecord)(h.Model), Effort: h.Effort, Permission: h.Permission,
		Usage: sessionUsageRecordOf(&h.Usage), Budget: budgetRecordOf(&h.Budget),
		MessageCount: h.MessageCount, UserMessageCount: h.UserMessageCount, MessagesBytes: h.MessagesBytes,
		MessagesCRC: h.MessagesCRC, RuntimeCount: h.RuntimeCount, RuntimeBytes: h.RuntimeBytes, RuntimeCRC: h.RuntimeCRC,
		TimingsCount: h.TimingsCount, TimingsBytes: h.TimingsBytes, TimingsCRC: h.TimingsCRC,
		Recovered: (*recoveredRecord)(h.Recovered), PendingRun: h.PendingRun,
		Compaction: (*compactionRecord)(h.Compaction), Migration: (*migrationRecord)(h.Migration),
		Parent: (*parentRecord)(h.Parent), PendingFork: h.PendingFork,
	}
}

func (r *headerRecord) header() Header {
	h := Header{
		Format: r.Format, Version: r.Version, ID: r.ID, WorkspaceID: r.WorkspaceID, Cwd: r.Cwd,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Title: r.Title, TitleSource: r.TitleSource, PinnedAt: r.PinnedAt, Unread: r.Unread, ArchivedAt: r.ArchivedAt,
		Model: (*ModelRef)(r.Model), Effort: r.Effort, Permission: r.Permission,
		MessageCount: r.MessageCount, UserMessageCount: r.UserMessageCount, MessagesBytes: r.MessagesBytes,
		MessagesCRC: r.MessagesCRC, RuntimeCount: r.RuntimeCount, RuntimeBytes: r.RuntimeBytes, RuntimeCRC: r.RuntimeCRC,
		TimingsCount: r.TimingsCount, TimingsBytes: r.TimingsBytes, TimingsCRC: r.TimingsCRC,
		Recovered: (*RecoveredRun)(r.Recovered), PendingRun: r.PendingRun,
		Compaction: (*CompactionMeta)(r.Compaction), Migration: (*MigrationRecord)(r.Migration),
		Budget: r.Budget.budget(), Parent: (*ParentRef)(r.Parent), PendingFork: r.PendingFork,
	}
	h.Usage, _ = r.Usage.usage()
	return h
}

// runtimeRecord is one line of runtime.jsonl.
type runtimeRecord struct {
	Type string          `json:"type"`
	Time int64           `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// recoveryRecord is a recovery file (docs/storage.md). Its members are in
// alphabetical order, as Loop has always written them.
type recoveryRecord struct {
	Cwd       string          `json:"cwd"`
	Error     string          `json:"error"`
	Header    headerRecord    `json:"header"`
	Messages  []messageRecord `json:"messages"`
	SessionID string          `json:"sessionId"`
	// Usage has the header's form, so that the two compare member by
	// member: their difference is what the save did not write.
	Usage       *sessionUsageRecord `json:"usage,omitempty"`
	WorkspaceID *string             `json:"workspaceId"`
}
