package store

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Recovery is a session's unsaved result, written to a recovery file when
// even shutdown could not save it (docs/storage.md). loop import reads it
// back (ParseRecovery) and commits it into its session.
type Recovery struct {
	SessionID   string
	WorkspaceID *string // nil: the independent collection
	Cwd         string
	Error       string // why the save failed
	Header      Header
	// Timings are written as the header's promptTimings, as recovery
	// files have always held them.
	Timings  []PromptTiming
	Messages []convo.Message // the whole unsaved history
	// Usage is the session's whole usage ledger, the calls Header.Usage
	// lacks included: what the unsaved run cost is otherwise lost.
	Usage convo.SessionUsage
}

// EncodeRecovery encodes a recovery file: indented JSON, with the header
// and messages as the session format writes them.
func EncodeRecovery(r *Recovery) ([]byte, error) {
	h := headerRecordOf(&r.Header)
	// The header holds the timings themselves, as headers did before
	// timings.jsonl: it names no records of that file, so a reader of
	// either format finds exactly these timings.
	h.PromptTimings = recordsOfTimings(r.Timings)
	h.TimingsCount, h.TimingsBytes, h.TimingsCRC = 0, 0, 0
	// The file holds the whole history, a fork's parent part included:
	// it is a version 1 header without parent (docs/storage.md, "Forks
	// and rewinds"), as an export's is.
	h.Version, h.Parent, h.PendingFork = FormatVersion, nil, ""
	rec := recoveryRecord{SessionID: r.SessionID, WorkspaceID: r.WorkspaceID, Cwd: r.Cwd, Error: r.Error, Header: h, Usage: sessionUsageRecordOf(&r.Usage)}
	if r.Messages != nil {
		rec.Messages = make([]messageRecord, len(r.Messages))
		for i := range r.Messages {
			rec.Messages[i] = messageRecordOf(&r.Messages[i])
		}
	}
	b, err := jsonenc.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode recovery file: %w", err)
	}
	return b, nil
}

// RecoveryFormat is the import record's "from" of a session made from a
// recovery file (docs/storage.md, "Recovery files").
const RecoveryFormat = "loop-recovery"

// IsRecovery reports whether data looks like a recovery file: a JSON
// object whose first members are cwd, error and header, in that order,
// as Loop writes them. It reads only those members; ParseRecovery checks
// the rest.
func IsRecovery(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for _, want := range []string{"cwd", "error", "header"} {
		t, err := dec.Token()
		if err != nil || t != want {
			return false
		}
		if want == "header" {
			return true
		}
		v, err := dec.Token()
		if _, ok := v.(string); err != nil || !ok {
			return false
		}
	}
	return false
}

// ParseRecovery decodes a recovery file read from path. It refuses one
// whose identity does not hold together (its session id, the header's id
// and workspace, an absolute cwd), whose messages have unknown roles, or
// whose timings and usage no session could hold, naming the file: such a
// file is never applied to a session.
func ParseRecovery(data []byte, path string) (*Recovery, error) {
	var rec recoveryRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%w: %s: not a recovery file: %v", ErrMalformed, path, err)
	}
	h := rec.Header.header()
	bad := func(format string, args ...any) (*Recovery, error) {
		return nil, malformed(path, format, args...)
	}
	switch {
	case h.Format != FormatName || h.Version != FormatVersion:
		return nil, fmt.Errorf("%w: %s: session format %q version %d", ErrUnsupportedFormat, path, h.Format, h.Version)
	case !validID(rec.SessionID):
		return bad("sessionId %q is not a session id", rec.SessionID)
	case h.ID != rec.SessionID:
		return bad("header id %q is not the sessionId %s", h.ID, rec.SessionID)
	case rec.WorkspaceID != nil && !validID(*rec.WorkspaceID):
		return bad("workspaceId %q is not a workspace id", *rec.WorkspaceID)
	case (rec.WorkspaceID == nil) != (h.WorkspaceID == nil) || (rec.WorkspaceID != nil && *rec.WorkspaceID != *h.WorkspaceID):
		return bad("the header's workspaceId is not the file's")
	case !filepath.IsAbs(rec.Cwd):
		return bad("cwd %q is not an absolute path", rec.Cwd)
	case h.MessageCount < 0 || h.MessageCount > len(rec.Messages):
		return bad("the header commits %d messages of the %d the file holds", h.MessageCount, len(rec.Messages))
	}
	r := &Recovery{
		SessionID: rec.SessionID, WorkspaceID: rec.WorkspaceID, Cwd: rec.Cwd, Error: rec.Error,
		Header: h, Timings: timingsOfRecords(rec.Header.PromptTimings),
		Messages: make([]convo.Message, len(rec.Messages)),
	}
	r.Usage, _ = rec.Usage.usage()
	for i := range rec.Messages {
		m := rec.Messages[i].message()
		if _, ok := roleKind(m.Role); !ok {
			return bad("message %d has role %q", i, m.Role)
		}
		// The file is indented, arguments included: the history holds
		// them compact, as messages.jsonl does.
		for b := range m.Content {
			if args := m.Content[b].Arguments; len(args) > 0 {
				var buf bytes.Buffer
				if err := json.Compact(&buf, args); err != nil {
					return bad("message %d block %d: arguments: %v", i, b, err)
				}
				m.Content[b].Arguments = buf.Bytes()
			}
		}
		r.Messages[i] = m
	}
	for i := range r.Timings {
		tm := &r.Timings[i]
		if err := tm.validate(); err != nil {
			return bad("timing %d: %v", i, err)
		}
		if err := tm.within(len(r.Messages)); err != nil {
			return bad("timing %d: %v", i, err)
		}
	}
	if err := r.Usage.Validate(); err != nil {
		return bad("usage: %v", err)
	}
	if err := r.Header.Usage.Validate(); err != nil {
		return bad("header usage: %v", err)
	}
	return r, nil
}

// Unsaved is the part of the usage ledger the file's committed header
// lacks: what the unsaved work cost (docs/storage.md).
func (r *Recovery) Unsaved() convo.SessionUsage {
	return convo.SessionUsage{
		UsageSum:   subUsage(r.Usage.UsageSum, r.Header.Usage.UsageSum),
		Title:      subUsage(r.Usage.Title, r.Header.Usage.Title),
		Compaction: subUsage(r.Usage.Compaction, r.Header.Usage.Compaction),
	}
}

// subUsage is a−b, each figure at least 0: a file can hold any numbers.
func subUsage(a, b convo.UsageSum) convo.UsageSum {
	sub := func(x, y int) int { return max(x-y, 0) }
	return convo.UsageSum{
		Input: sub(a.Input, b.Input), Output: sub(a.Output, b.Output), CacheRead: sub(a.CacheRead, b.CacheRead),
		CacheWrite: sub(a.CacheWrite, b.CacheWrite), TotalTokens: sub(a.TotalTokens, b.TotalTokens),
		Calls: sub(a.Calls, b.Calls), Cost: max(a.Cost-b.Cost, 0), Unpriced: sub(a.Unpriced, b.Unpriced),
	}
}

// RecoveryFit is how a recovery file's history stands to a session's
// committed one.
type RecoveryFit int

const (
	// RecoveryExtends: the committed history and timings are a proper
	// prefix of the file's; the rest can be committed.
	RecoveryExtends RecoveryFit = iota + 1
	// RecoveryApplied: the file's history is already a prefix of the
	// committed one (imported before, or saved after all).
	RecoveryApplied
	// RecoveryDiverged: the session went on without the file's result.
	RecoveryDiverged
)

// Fit compares the file's history with a session's committed messages
// and timings. Messages are compared as messages.jsonl writes them.
func (r *Recovery) Fit(committed []convo.Message, timings []PromptTiming) RecoveryFit {
	n := min(len(committed), len(r.Messages))
	var a, b []byte
	for i := range n {
		ra, rb := messageRecordOf(&r.Messages[i]), messageRecordOf(&committed[i])
		var errA, errB error
		a, errA = ra.appendJSON(a[:0])
		b, errB = rb.appendJSON(b[:0])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			return RecoveryDiverged
		}
	}
	if len(r.Messages) <= len(committed) {
		return RecoveryApplied
	}
	if len(timings) > len(r.Timings) {
		return RecoveryDiverged
	}
	for i := range timings {
		if timings[i] != r.Timings[i] {
			return RecoveryDiverged
		}
	}
	return RecoveryExtends
}

// Imported is the file as a new session to import (Root.Import): the
// unsaved history, timings and whole usage ledger with the committed
// header's metadata, and an import record naming path. keepID keeps the
// session's id (a session that never reached the disk); otherwise the new
// session is a copy of one that went on without this result, and its id
// derives from the file's checksum. A copy holds no compaction: its
// checkpoint is not in the file.
func (r *Recovery) Imported(path string, keepID bool) Imported {
	h := r.Header.clone()
	h.Usage = r.Usage
	mig := &MigrationRecord{From: RecoveryFormat, SourcePath: path}
	if keepID {
		mig.SourceID = r.SessionID
	} else {
		mig.Notes = append(mig.Notes, fmt.Sprintf("session %s went on without this unsaved result: this is a copy with it", r.SessionID))
		if h.Compaction != nil {
			mig.Notes = append(mig.Notes, "the compaction checkpoint is not in the recovery file: the whole history is the model's input")
			h.Compaction = nil
		}
		if h.Title != "" {
			h.Title += " (recovered)"
		}
	}
	h.Migration = mig
	if n := h.MessageCount; n < len(r.Messages) {
		for i := n; i < len(r.Messages); i++ {
			if m := &r.Messages[i]; m.Role == convo.RoleAssistant && len(m.Content) > 0 {
				h.Unread = true
			}
			h.UpdatedAt = max(h.UpdatedAt, r.Messages[i].Timestamp)
		}
	}
	return Imported{Header: h, Messages: r.Messages, Timings: r.Timings}
}

// RecoveryFiles returns the paths of the recovery files of session id
// that Loop wrote beside the session's directory (Layout.Recovery),
// oldest first. It reads the scope's directory once, so it is for when a
// session opens, never for every snapshot. Files written to the temp
// directory (when the data root refused them too) are not found here.
func (r *Root) RecoveryFiles(workspaceID, id string) ([]string, error) {
	dir, err := r.scopeDir(workspaceID)
	if err != nil {
		return nil, err
	}
	entries, err := r.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recovery files of session %s: %w", id, err)
	}
	type found struct {
		ms   int64
		name string
	}
	var files []found
	for _, e := range entries {
		if ms, ok := RecoveryOf(e.Name(), id); ok && e.Type().IsRegular() {
			files = append(files, found{ms, e.Name()})
		}
	}
	slices.SortFunc(files, func(a, b found) int { return cmp.Or(cmp.Compare(a.ms, b.ms), strings.Compare(a.name, b.name)) })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f.name)
	}
	return out, nil
}

// ImportedCopy finds the session that a recovery file with checksum sum
// became when it was imported as a copy (Recovery.Imported without
// keepID): such a file is no longer waiting.
func (r *Root) ImportedCopy(sum [32]byte) (id string, found bool, err error) {
	id, _, found, err = r.migrationID("", hex.EncodeToString(sum[:]))
	return id, found, err
}
