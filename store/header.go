package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// The current session format. A header with another format name or version
// belongs to another program or another release: it is excluded, untouched.
//
// FormatVersion is what a session is written as unless it needs more:
// every session that is not a fork and was never rewound, so that older
// releases still read it. ForkFormatVersion (2) adds a header's parent
// (the history a fork shares with its parent, not copied), a rewind's
// pendingFork, the cut records of timings.jsonl and the rewind runtime
// record (docs/storage.md, "Forks and rewinds"); a release before it
// excludes such a session instead of misreading it.
const (
	FormatName        = "loop-session"
	FormatVersion     = 1
	ForkFormatVersion = 2
)

// Title sources.
const (
	TitleAuto   = "auto"
	TitleManual = "manual"
)

// Header is a session's metadata: header.json (a headerRecord, records.go
// has the member names). It names the committed range of the logs; readers
// trust nothing past it.
type Header struct {
	Format      string
	Version     int
	ID          string
	WorkspaceID *string // nil: the independent collection
	Cwd         string
	CreatedAt   int64 // Unix ms
	UpdatedAt   int64 // Unix ms of the last activity

	Title       string
	TitleSource string  // "", "auto" or "manual"
	PinnedAt    *string // RFC 3339 UTC, ms precision
	Unread      bool
	ArchivedAt  *string // RFC 3339 UTC, ms precision
	Model       *ModelRef
	Effort      string
	Permission  string
	// Usage is the session's usage ledger, committed with the work that
	// made the calls; Budget its limits (store/usage.go).
	Usage  convo.SessionUsage
	Budget Budget

	// The committed range. messages.jsonl holds MessageCount lines in its
	// first MessagesBytes bytes, whose CRC-32C is MessagesCRC; index.bin
	// holds MessageCount records; runtime.jsonl likewise for runtime records;
	MessageCount     int
	UserMessageCount int
	MessagesBytes    int64
	MessagesCRC      uint32
	RuntimeCount     int
	RuntimeBytes     int64
	RuntimeCRC       uint32
	// timings.jsonl likewise: TimingsCount lines (records, not timings: a
	// timing is written again when it changes). The timings themselves are
	// read with Session.Timings, not carried here, so that copying a
	// header costs the same however long the session.
	TimingsCount int
	TimingsBytes int64
	TimingsCRC   uint32

	// Recovered is the run the store recovered from a crashed process's
	// journal when the session was last opened (store/recover.go); the
	// next run's commit clears it (the engine's edit). nil: none.
	Recovered *RecoveredRun
	// PendingRun is the run whose prompt made a draft exist on disk
	// (PersistForRun): its messages are in the journal until its commit,
	// which clears this; lists show the session meanwhile, though it
	// holds no committed user message. "": none.
	PendingRun string

	Compaction *CompactionMeta
	Migration  *MigrationRecord

	// Parent is the session whose first Parent.MessageCount messages are
	// this fork's first messages, read from there (or from the base a
	// deletion of the parent left in this directory, store/fork.go), not
	// copied; nil: none. MessageCount and UserMessageCount count the whole
	// history, the parent's part included; the log holds the rest.
	Parent *ParentRef
	// PendingFork is the fork a rewind made of what it dropped, while its
	// directory may still wait inside this one to be moved into the scope
	// (store/rewind.go); "": none.
	PendingFork string
}

// ParentRef is a fork's parent and the part of its history the fork
// shares (docs/storage.md, "Forks and rewinds").
type ParentRef struct {
	SessionID        string
	MessageCount     int    // the parent's messages the fork starts with
	UserMessageCount int    // how many of them are user messages
	MessagesCRC      uint32 // CRC-32C of their lines, as messages.jsonl holds them
	Timings          int    // the parent's prompt timings the fork starts with
}

// ownMessages is how many messages the session's own log holds.
func (h *Header) ownMessages() int {
	if h.Parent == nil {
		return h.MessageCount
	}
	return h.MessageCount - h.Parent.MessageCount
}

// baseCRC is the checksum the own log's continues: the parent's part's.
func (h *Header) baseCRC() uint32 {
	if h.Parent == nil {
		return 0
	}
	return h.Parent.MessagesCRC
}

// ModelRef names a model.
type ModelRef struct {
	Provider string
	ID       string
}

// RecoveredRun is what a recovery on open committed of an interrupted
// run (docs/storage.md, "The journal of the run in progress").
type RecoveredRun struct {
	RunID         string
	Messages      int   // messages the recovery committed, the error results it added included
	InterruptedAt int64 // Unix ms of the journal's last complete record
}

// CompactionMeta describes the latest compaction checkpoint. The checkpoint
// itself (the summary) is a runtime record.
type CompactionMeta struct {
	ID string
	// MessageCount is the history count where the "compacted" marker goes:
	// the messages before it are summarized.
	MessageCount int
	TokensBefore int
	CreatedAt    int64
}

// MigrationRecord is the import record: where an imported (or migrated)
// session came from and what of the source had no place in Loop's format
// (and where it went).
type MigrationRecord struct {
	From          string // the source format: "pi-jsonl", "loop-export", "claude-code-jsonl", "codex-rollout-jsonl", "loop-recovery"
	SourcePath    string
	SourceID      string
	SourceVersion int    // the source format's version, when it numbers them (pi)
	SourceApp     string // the program and version that wrote the source ("claude-code 2.1.332")
	SourceSHA256  string
	MigratedAt    int64
	Notes         []string
	// Previous is the import record the source itself carried (a Loop
	// export of an imported session), without its own Previous.
	Previous json.RawMessage
}

// RuntimeRecord is one line of runtime.jsonl: metadata committed apart from
// the original messages (compaction checkpoints {summary, messageCount, ...},
// migration leftovers, ...). The store does not interpret Data.
type RuntimeRecord struct {
	Type string
	Time int64 // Unix ms
	Data json.RawMessage
}

// Summary is what List returns for one session: header fields only, no
// file paths.
type Summary struct {
	ID               string
	WorkspaceID      *string
	Title            string
	TitleSource      string
	CreatedAt        int64
	UpdatedAt        int64
	MessageCount     int
	UserMessageCount int
	Unread           bool
	PinnedAt         *string
	Archived         bool
	ArchivedAt       *string
	Model            *ModelRef
	Usage            convo.SessionUsage
	// Parent is the fork's parent, nil for a session that is no fork.
	Parent *ParentRef
}

// Summary returns the list summary of h.
func (h *Header) Summary() Summary {
	c := h.clone()
	return Summary{
		ID: c.ID, WorkspaceID: c.WorkspaceID, Title: c.Title, TitleSource: c.TitleSource,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		MessageCount: c.MessageCount, UserMessageCount: c.UserMessageCount,
		Unread: c.Unread, PinnedAt: c.PinnedAt, Archived: c.ArchivedAt != nil, ArchivedAt: c.ArchivedAt,
		Model: c.Model, Usage: c.Usage, Parent: c.Parent,
	}
}

// clone returns a deep copy of h, so callers cannot reach the session's own
// pointers and slices.
func (h *Header) clone() Header {
	c := *h
	c.WorkspaceID = clonePtr(h.WorkspaceID)
	c.PinnedAt = clonePtr(h.PinnedAt)
	c.ArchivedAt = clonePtr(h.ArchivedAt)
	c.Model = clonePtr(h.Model)
	c.Compaction = clonePtr(h.Compaction)
	c.Recovered = clonePtr(h.Recovered)
	c.Parent = clonePtr(h.Parent)
	if h.Migration != nil {
		m := *h.Migration
		m.Notes = slices.Clone(m.Notes)
		m.Previous = slices.Clone(m.Previous)
		c.Migration = &m
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// scopeName is the directory name of a scope: the workspace id, or "global".
func scopeName(workspaceID *string) string {
	if workspaceID == nil {
		return globalScope
	}
	return *workspaceID
}

// headerKind sorts a header file: current format, another format or
// version (ok false, err nil), or not a JSON object (err, ErrMalformed). It
// decodes into dst, whose Format and Version fields it reads.
func headerKind(data []byte, file string, dst any, format *string, version *json.RawMessage) (bool, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return false, malformed(file, "not a JSON object")
	}
	err := json.Unmarshal(data, dst)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return false, malformed(file, "not a JSON object: %v", err)
	}
	if *format != FormatName || readableVersion(*version) == 0 {
		return false, nil
	}
	if err != nil {
		return true, malformed(file, "%v", err)
	}
	return true, nil
}

// readableVersion is the session format version v names, or 0 when it is
// not one this release reads.
func readableVersion(v json.RawMessage) int {
	switch string(bytes.TrimSpace(v)) {
	case "1":
		return FormatVersion
	case "2":
		return ForkFormatVersion
	}
	return 0
}

// probeHeader reads only the format name and version of a header file.
// ok is false for a file of another format or version.
func probeHeader(data []byte, file string) (ok bool, err error) {
	var p struct {
		Format  string          `json:"format"`
		Version json.RawMessage `json:"version"`
	}
	return headerKind(data, file, &p, &p.Format, &p.Version)
}

// parseHeader decodes and validates a header file. A file of another format
// or version returns an error wrapping ErrUnsupportedFormat; a current-format
// file that breaks the format returns one wrapping ErrMalformed.
func parseHeader(data []byte, file string) (Header, error) {
	h, _, err := parseHeaderTimings(data, file)
	return h, err
}

// parseHeaderTimings is parseHeader that also returns the prompt timings
// an old header holds (nil for a current one, docs/storage.md).
func parseHeaderTimings(data []byte, file string) (Header, []PromptTiming, error) {
	ok, err := probeHeader(data, file)
	if err != nil {
		return Header{}, nil, err
	}
	if !ok {
		return Header{}, nil, fmt.Errorf("%w: %s", ErrUnsupportedFormat, file)
	}
	var rec headerRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return Header{}, nil, malformed(file, "%v", err)
	}
	h := rec.header()
	if err := h.validate(); err != nil {
		return Header{}, nil, malformed(file, "%v", err)
	}
	legacy := timingsOfRecords(rec.PromptTimings)
	if len(legacy) > 0 && h.TimingsCount > 0 {
		// The timings live in one place or the other (docs/storage.md):
		// the commit that moves promptTimings to timings.jsonl starts the
		// fold from an empty list.
		return Header{}, nil, malformed(file, "promptTimings and %d records of %s", h.TimingsCount, timingsFile)
	}
	for i := range legacy {
		if err := legacy[i].validate(); err != nil {
			return Header{}, nil, malformed(file, "promptTimings[%d]: %v", i, err)
		}
	}
	return h, legacy, nil
}

// skipJSON stands for a field List does not need: the decoder checks its
// syntax and allocates nothing for it.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// listHeader is a header record without its growing parts (prompt
// timings, the migration record), decoded in a single pass.
type listHeader struct {
	headerRecord
	Version       json.RawMessage `json:"version"`
	PromptTimings skipJSON        `json:"promptTimings"`
	Migration     skipJSON        `json:"migration"`
}

// parseListHeader is parseHeader for List: the same verdicts on format and
// validity of every field List returns, but PromptTimings and Migration are
// only checked for JSON syntax (Open checks them fully), and when the
// prompt timings are the last member, as Loop wrote them, they are not
// read at all (see parseListHead). Only headers written before
// timings.jsonl hold prompt timings; a current header has none, so the
// shortcut only matters for sessions not yet migrated (docs/storage.md).
// data may be overwritten.
func parseListHeader(data []byte, file string) (Header, error) {
	if h, ok := parseListHead(data, data, file); ok {
		return h, nil
	}
	return decodeListHeader(data, file)
}

// parseListHead decodes a header for List from its first bytes, head, and
// its last bytes, end, when head holds the key of the prompt timings and
// the header ends with "]}" (and whitespace): the timings are then taken
// to be the last member, as Loop wrote them before timings.jsonl (current
// headers hold no timings, see parseListHeader), and only the part before
// them is decoded, so the cost does not grow with the number of timings.
// ok is false when that does not apply or the part does not decode; the
// whole header then decides. head is overwritten, and restored when ok is
// false.
func parseListHead(head, end []byte, file string) (h Header, ok bool) {
	i := bytes.Index(head, timingsKey)
	if i < 0 || !bytes.HasSuffix(bytes.TrimRight(end, " \t\r\n"), []byte("]}")) {
		return Header{}, false
	}
	// The key cannot occur inside a string. If it is nested deeper than
	// the top level, one closing brace leaves the JSON unbalanced and the
	// part fails to decode.
	head[i] = '}'
	h, err := decodeListHeader(head[:i+1], file)
	if err != nil {
		head[i] = timingsKey[0]
		return Header{}, false
	}
	return h, true
}

// decodeListHeader decodes a header (or the part before its timings) for
// List.
func decodeListHeader(data []byte, file string) (Header, error) {
	var lh listHeader
	ok, err := headerKind(data, file, &lh, &lh.Format, &lh.Version)
	if err != nil {
		return Header{}, err
	}
	if !ok {
		return Header{}, fmt.Errorf("%w: %s", ErrUnsupportedFormat, file)
	}
	h := lh.headerRecord.header()
	h.Version = readableVersion(lh.Version)
	if err := h.validate(); err != nil {
		return Header{}, malformed(file, "%v", err)
	}
	return h, nil
}

// validate checks the invariants every stored header holds.
func (h *Header) validate() error {
	if h.Format != FormatName || (h.Version != FormatVersion && h.Version != ForkFormatVersion) {
		return fmt.Errorf("format %q version %d", h.Format, h.Version)
	}
	if err := h.validateParent(); err != nil {
		return err
	}
	if !validID(h.ID) {
		return fmt.Errorf("id %q is not a UUID", h.ID)
	}
	if h.WorkspaceID != nil && !validID(*h.WorkspaceID) {
		return fmt.Errorf("workspaceId %q is not a UUID", *h.WorkspaceID)
	}
	if !filepath.IsAbs(h.Cwd) {
		return fmt.Errorf("cwd %q is not an absolute path", h.Cwd)
	}
	if h.CreatedAt < 0 || h.UpdatedAt < 0 {
		return fmt.Errorf("negative timestamp")
	}
	if err := h.validateMeta(); err != nil {
		return err
	}
	switch {
	case h.MessageCount < 0 || h.UserMessageCount < 0 || h.MessagesBytes < 0 || h.RuntimeCount < 0 || h.RuntimeBytes < 0 ||
		h.TimingsCount < 0 || h.TimingsBytes < 0:
		return fmt.Errorf("negative committed range")
	case h.UserMessageCount > h.MessageCount:
		return fmt.Errorf("userMessageCount %d exceeds messageCount %d", h.UserMessageCount, h.MessageCount)
	// Each line takes at least 3 bytes ("{}\n"); dividing cannot overflow
	// as multiplying a corrupt count could.
	case int64(h.ownMessages()) > h.MessagesBytes/3 || (h.ownMessages() == 0) != (h.MessagesBytes == 0):
		return fmt.Errorf("messagesBytes %d cannot hold %d messages", h.MessagesBytes, h.ownMessages())
	case int64(h.RuntimeCount) > h.RuntimeBytes/3 || (h.RuntimeCount == 0) != (h.RuntimeBytes == 0):
		return fmt.Errorf("runtimeBytes %d cannot hold %d records", h.RuntimeBytes, h.RuntimeCount)
	case int64(h.TimingsCount) > h.TimingsBytes/3 || (h.TimingsCount == 0) != (h.TimingsBytes == 0):
		return fmt.Errorf("timingsBytes %d cannot hold %d records", h.TimingsBytes, h.TimingsCount)
	case h.ownMessages() == 0 && h.MessagesCRC != h.baseCRC():
		return fmt.Errorf("checksum of an empty log is not its parent's part's")
	case h.RuntimeCount == 0 && h.RuntimeCRC != 0, h.TimingsCount == 0 && h.TimingsCRC != 0:
		return fmt.Errorf("checksum of an empty log is not 0")
	}
	return nil
}

// validateParent checks a fork's parent member: only in version 2, and
// within the history.
func (h *Header) validateParent() error {
	if h.PendingFork != "" && (h.Version < ForkFormatVersion || !validID(h.PendingFork)) {
		return fmt.Errorf("pendingFork %q in a version %d header", h.PendingFork, h.Version)
	}
	p := h.Parent
	if p == nil {
		return nil
	}
	switch {
	case h.Version < ForkFormatVersion:
		return fmt.Errorf("parent in a version %d header", h.Version)
	case !validID(p.SessionID) || p.SessionID == h.ID:
		return fmt.Errorf("parent.sessionId %q is not another session's id", p.SessionID)
	case p.MessageCount < 0 || p.MessageCount > h.MessageCount:
		return fmt.Errorf("parent.messageCount %d outside history of %d messages", p.MessageCount, h.MessageCount)
	case p.UserMessageCount < 0 || p.UserMessageCount > p.MessageCount || p.UserMessageCount > h.UserMessageCount:
		return fmt.Errorf("parent.userMessageCount %d does not fit", p.UserMessageCount)
	case p.Timings < 0:
		return fmt.Errorf("negative parent.timings")
	}
	return nil
}

// validateMeta checks the fields callers may edit.
func (h *Header) validateMeta() error {
	switch h.TitleSource {
	case "", TitleAuto, TitleManual:
	default:
		return fmt.Errorf("titleSource %q is not \"\", %q or %q", h.TitleSource, TitleAuto, TitleManual)
	}
	for name, ts := range map[string]*string{"pinnedAt": h.PinnedAt, "archivedAt": h.ArchivedAt} {
		if ts != nil {
			if _, err := time.Parse(time.RFC3339Nano, *ts); err != nil {
				return fmt.Errorf("%s %q is not an RFC 3339 time", name, *ts)
			}
		}
	}
	if h.UpdatedAt < 0 {
		return fmt.Errorf("negative updatedAt")
	}
	if err := h.Usage.Validate(); err != nil {
		return err
	}
	if err := h.Budget.Validate(); err != nil {
		return err
	}
	if c := h.Compaction; c != nil && (c.MessageCount < 0 || c.MessageCount > h.MessageCount) {
		return fmt.Errorf("compaction.messageCount %d outside history of %d messages", c.MessageCount, h.MessageCount)
	}
	if r := h.Recovered; r != nil && (r.Messages < 0 || r.Messages > h.MessageCount || r.InterruptedAt < 0) {
		return fmt.Errorf("recovered.messages %d outside history of %d messages", r.Messages, h.MessageCount)
	}
	return nil
}

// formatTime renders t as RFC 3339 UTC with millisecond precision, the form
// of pinnedAt and archivedAt.
func formatTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
}

// validID reports whether s is a UUID in canonical form (any version: legacy
// migrated sessions keep their pi id). It keeps ids safe as path elements.
func validID(s string) bool {
	if len(s) != 36 {
		return false
	}
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// encodeHeader encodes h as header.json. legacy is not nil only for a
// session whose header still holds its prompt timings (written before
// timings.jsonl, docs/storage.md): metadata saves keep them there until
// the next commit moves them.
func encodeHeader(h *Header, legacy []PromptTiming) ([]byte, error) {
	rec := headerRecordOf(h)
	rec.PromptTimings = recordsOfTimings(legacy)
	b, err := jsonenc.Marshal(&rec)
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	return append(b, '\n'), nil
}

// timingsKey opens the prompt timings, which Loop wrote as the last field
// of headers before timings.jsonl. The sequence cannot occur inside a JSON string (its quotes
// would have to be escaped), so finding it finds a member of that name, at
// the top level or nested.
var timingsKey = []byte(`,"promptTimings":[`)
